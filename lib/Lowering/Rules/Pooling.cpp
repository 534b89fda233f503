// Pooling: no generated kernels yet; max_pool and avg_pool run on their reference kernels.
#include "Rules.h"

namespace tensorc::loop {

void addPoolingRules(RuleTable &table) {
  table.fallback(OpId::MaxPool, "no pooling kernel yet");
  table.fallback(OpId::AvgPool, "no pooling kernel yet");
  table.fallback(OpId::MaxPoolWithIndices, "no pooling kernel yet");
}

} // namespace tensorc::loop
