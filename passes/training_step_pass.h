#ifndef GRAPHOPT_PASSES_TRAINING_STEP_PASS_H_
#define GRAPHOPT_PASSES_TRAINING_STEP_PASS_H_

#include "passes/pass.h"

namespace graphopt {

// Names of the training step's shared state: the step count (int64 scalar, the number of steps
// taken) and the learning rate (float32 scalar; a graph input with a default, so that a caller
// may feed a schedule).
inline constexpr char kTrainingStepName[] = "training.step";
inline constexpr char kTrainingLrName[] = "training.lr";

// Registry entry of the training_step pass (see its description in the .cc file).
PassInfo TrainingStepPassInfo();

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_TRAINING_STEP_PASS_H_
