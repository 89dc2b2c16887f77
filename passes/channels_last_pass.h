#ifndef GRAPHOPT_PASSES_CHANNELS_LAST_PASS_H_
#define GRAPHOPT_PASSES_CHANNELS_LAST_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Registry entry of the channels_last pass (see its description in the .cc file).
PassInfo ChannelsLastPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_CHANNELS_LAST_PASS_H_
