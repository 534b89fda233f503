// libFuzzer harness: arbitrary text parsed as FX-text. What parses must print and parse back to
// an equal graph (DESIGN §3); a rejection is fine, a crash or a failed round trip is a finding.
#include "FuzzCommon.h"

#include "tensorc/Frontend/FX/FxParser.h"
#include "tensorc/IR/Printer.h"

using namespace tensorc;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitTensorBytes();
  fuzz::registry();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  Expected<Graph> graph = fx::parseFx(text, fuzz::registry(), "fuzz.fx");
  if (!graph)
    return 0;
  std::string printed = printGraph(*graph);
  Expected<Graph> reparsed = fx::parseFx(printed, fuzz::registry(), "printed.fx");
  fuzz::check(bool(reparsed), "the printed graph does not parse: " +
                                  (reparsed ? std::string() : reparsed.error().message()) + "\n" +
                                  printed);
  std::string difference;
  fuzz::check(graphsEqual(*graph, *reparsed, &difference),
              "parse(print(g)) != g: " + difference + "\n" + printed);
  return 0;
}
