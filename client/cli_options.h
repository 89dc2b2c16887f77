#ifndef GRAPHOPT_CLIENT_CLI_OPTIONS_H_
#define GRAPHOPT_CLIENT_CLI_OPTIONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/optimizer.pb.h"

namespace graphopt {

// Parses the --passes syntax: passes separated by ',', each `name` or
// `name:key=value;key2=value2`. A value holding ',', ';', '=' or blanks that belong to it is
// quoted: `plan_memory:dim_bounds="batch:8,seq:128"`, `gradient:wrt="a;b";loss=l`. Inside
// and outside quotes a backslash takes the next character literally (`\"`, `\\`, `\,`);
// quoted and unquoted pieces of one value join (`k=a"b,c"` is `ab,c`). Blanks around names,
// keys and unquoted values are ignored. Names and keys are letters, digits, '_', '.', '-'.
// INVALID_ARGUMENT, naming the pass, the option and the column (from 1), for: an empty pass
// name or key, a name or key holding other characters, an option without '=', an unquoted
// '=' or an unquoted blank inside a value (a blank-separated list is the usual mistake), an
// empty option (a stray ';'), an unterminated quote, a trailing backslash, a key given twice
// for one pass. Nothing is dropped or guessed. Pass names and option keys are not checked
// against the optimizer's: it rejects unknown ones.
absl::StatusOr<std::vector<v1::PassSpec>> ParsePassList(absl::string_view text);

// Parses --bind values of the form `symbol=N` (N a decimal integer, possibly negative: the
// optimizer decides what is allowed). INVALID_ARGUMENT for a malformed entry or a symbol
// bound twice.
absl::StatusOr<std::map<std::string, int64_t>> ParseDimBindings(
    const std::vector<std::string>& bindings);

// What `graphopt grad` differentiates, as given on the command line (each list from a
// repeatable, comma-separated option).
struct GradNames {
  std::vector<std::string> loss;           // --loss: seeded with ones
  std::vector<std::string> wrt;            // --wrt: names, `params` or `inputs`
  std::vector<std::string> outputs;        // --outputs: seeds given as inputs "<name>_grad"
  std::vector<std::string> stop_gradient;  // --stop-gradient
};

// The gradient pass's options for `names` on `model`. In --wrt, `params` stands for every
// floating-point initializer and `inputs` for every floating-point graph input that is not an
// initializer (in the model's order; a value named twice counts once). INVALID_ARGUMENT naming
// the option and the value for a name the model does not have (no graph input, initializer or
// node output of that name), for --wrt empty after expansion, and for a name holding ',' or ';'
// (the pass's list separators).
absl::StatusOr<std::map<std::string, std::string>> GradientPassOptions(const v1::Graph& model,
                                                                       const GradNames& names);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_CLI_OPTIONS_H_
