#ifndef GRAPHOPT_CLIENT_GRAD_COMMAND_H_
#define GRAPHOPT_CLIENT_GRAD_COMMAND_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/backend.h"
#include "client/cli_options.h"

namespace graphopt {

// `graphopt grad MODEL --loss NAME --wrt NAME,... -o OUT`: the model with its backward graph.
struct GradArgs {
  std::string input;
  std::string output;
  GradNames names;
  // Suffix of the gradient outputs and seed inputs (the pass's default "_grad"); a second
  // differentiation of a differentiated graph needs another one.
  std::string suffix = "_grad";
  // The level whose passes optimize the differentiated graph (0: none, only verified).
  int opt_level = 2;
  std::vector<std::string> bindings;
  bool verify_each_pass = false;
  std::string report_json;
  bool quiet = false;
};

// Adds the `grad` subcommand and its options (the caller adds --server and the credential
// options, which every subcommand that talks to an optimizer shares).
CLI::App* AddGradCommand(CLI::App& app, GradArgs* args);

// Runs `grad` on `backend`: the gradient pass with the options (after infer_type and
// infer_shape, and after decompose_rnn for a model holding RNN, GRU or LSTM nodes when the
// optimizer has that pass), then the passes of -O<opt_level> on its result, in a second Optimize call so
// that the level's own pass order is the server's. Prints the pass table of both calls and the
// gradient outputs. Returns the process exit status (0, 1 for a failed request, 2 for usage).
int RunGrad(const GradArgs& args, OptimizerBackend& backend);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_GRAD_COMMAND_H_
