// Pooling: no generated kernels yet; max_pool and avg_pool run on their reference kernels.
#include "Rules.h"

namespace tensorc::loop {

void addPoolingRules(RuleTable &table) {
  table.fallback({OpId::MaxPool, OpId::AvgPool, OpId::MaxPoolWithIndices}, "no pooling kernel yet");
}

} // namespace tensorc::loop
