#include "graph/opset.h"

#include "gtest/gtest.h"

namespace graphopt {
namespace {

void Import(Graph& g, const std::string& domain, int64_t version) {
  v1::OpsetImport o;
  o.set_domain(domain);
  o.set_version(version);
  g.opset_imports.push_back(o);
}

TEST(OpsetTest, EitherSpellingOfTheDefaultDomainMatchesTheOther) {
  Graph imports_empty;
  Import(imports_empty, "", 13);
  Graph imports_named;
  Import(imports_named, "ai.onnx", 17);
  for (const char* domain : {"", "ai.onnx"}) {
    EXPECT_EQ(OpsetVersion(imports_empty, domain), 13) << domain;
    EXPECT_EQ(OpsetVersion(imports_named, domain), 17) << domain;
  }
  EXPECT_EQ(DefaultDomainOpset(imports_named), 17);
}

TEST(OpsetTest, OtherDomainsMatchExactlyAndMissingIsZero) {
  Graph g;
  Import(g, "com.example", 2);
  EXPECT_EQ(OpsetVersion(g, "com.example"), 2);
  EXPECT_EQ(OpsetVersion(g, "com.other"), 0);
  EXPECT_EQ(DefaultDomainOpset(g), 0);
  Import(g, "", 11);
  Import(g, "ai.onnx", 12);
  EXPECT_EQ(DefaultDomainOpset(g), 11);  // the first import wins
}

}  // namespace
}  // namespace graphopt
