#include "util/malloc_tuning.h"

#include <malloc.h>

namespace graphopt {

bool TuneMallocForGraphs() { return mallopt(M_MXFAST, 0) == 1; }

}  // namespace graphopt
