// Support: dtypes and half conversions, JSON, safetensors reading/writing and its rejections.
#include "tensorc/Support/DType.h"
#include "tensorc/Support/Json.h"
#include "tensorc/Support/Safetensors.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <unistd.h>

namespace tensorc {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                  DType::I16, DType::I8, DType::U8, DType::Bool}) {
    EXPECT_EQ(parseDType(dtypeName(d)), d);
    EXPECT_EQ(parseSafetensorsDType(dtypeSafetensorsName(d)), d);
  }
  EXPECT_EQ(parseDType("torch.float32"), DType::F32);
  EXPECT_EQ(parseDType("torch.bfloat16"), DType::BF16);
  EXPECT_FALSE(parseDType("f8"));
}

TEST(DType, PromotionFollowsTorch) {
  EXPECT_EQ(promoteTypes(DType::F16, DType::BF16), DType::F32);
  EXPECT_EQ(promoteTypes(DType::I64, DType::F16), DType::F16);
  EXPECT_EQ(promoteTypes(DType::U8, DType::I8), DType::I16);
  EXPECT_EQ(promoteTypes(DType::Bool, DType::I32), DType::I32);
  EXPECT_EQ(promoteTypes(DType::F32, DType::F64), DType::F64);
}

TEST(DType, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00); // overflow to infinity
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  // 1 + 2^-11 is halfway between 1 and the next half: ties to even (1.0).
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  for (uint32_t bits = 0; bits < 0x7c00; bits += 7) // every finite positive half round-trips
    ASSERT_EQ(floatToHalf(halfToFloat(uint16_t(bits))), bits);
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
}

TEST(Json, ParsesAndDumpsDeterministically) {
  Expected<Json> value = Json::parse(R"({"b": [1, 2.5, "x\n", true, null], "a": {"k": -3}})");
  ASSERT_TRUE(value) << value.error().message();
  EXPECT_EQ(value->dump(), R"({"a":{"k":-3},"b":[1,2.5,"x\n",true,null]})");
  EXPECT_EQ(value->find("a")->find("k")->asInt(), -3);
}

TEST(Json, RejectsMalformedText) {
  for (const char *bad : {"{", "[1,]", "{\"a\" 1}", "\"unterminated", "{\"a\":1}x", "01x", "nul",
                          "{\"a\":1,\"a\":2}"})
    EXPECT_FALSE(Json::parse(bad)) << bad;
}

class Safetensors : public ::testing::Test {
protected:
  std::string path(const std::string &name) {
    return ::testing::TempDir() + "tensorc_st_" + std::to_string(getpid()) + "_" + name;
  }
  void writeRaw(const std::string &file, const std::string &header, const std::string &data) {
    std::ofstream out(file, std::ios::binary);
    uint64_t length = header.size();
    out.write(reinterpret_cast<const char *>(&length), 8);
    out << header << data;
  }
  std::string readError(const std::string &file) {
    Expected<std::map<std::string, Tensor>> result = readSafetensors(file);
    return result ? "" : result.error().message();
  }
};

TEST_F(Safetensors, RoundTripsEveryDType) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                  DType::I16, DType::I8, DType::U8, DType::Bool}) {
    Tensor t = Tensor::zerosUnchecked(d, {2, 3});
    for (int64_t i = 0; i < 6; ++i)
      t.setDouble(i, double(i % 2 == 0 ? i : -i) * (d == DType::U8 || d == DType::Bool ? -1 : 1));
    tensors.emplace_back(std::string(dtypeName(d)), t);
  }
  tensors.emplace_back("empty", Tensor::zerosUnchecked(DType::F32, {0, 4}));
  std::string file = path("roundtrip.safetensors");
  ASSERT_TRUE(writeSafetensors(file, tensors).isOk());
  Expected<std::map<std::string, Tensor>> read = readSafetensors(file);
  ASSERT_TRUE(read) << read.error().message();
  ASSERT_EQ(read->size(), tensors.size());
  for (const auto &[name, tensor] : tensors) {
    EXPECT_TRUE(read->at(name).equals(tensor)) << name;
    // Larger elements are written first, so every tensor is aligned to its element size.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(read->at(name).data()) % dtypeSize(tensor.dtype()), 0u)
        << name;
  }
  std::remove(file.c_str());
}

TEST_F(Safetensors, RejectsMalformedFiles) {
  std::string file = path("bad.safetensors");
  {
    std::ofstream out(file, std::ios::binary);
    out << "abc";
  }
  EXPECT_NE(readError(file).find("truncated"), std::string::npos);

  writeRaw(file, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "1234");
  EXPECT_NE(readError(file).find("leave the data section"), std::string::npos);

  writeRaw(file, "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", "12345678");
  EXPECT_NE(readError(file).find("8 bytes of data for f32[3]"), std::string::npos);

  writeRaw(file,
           "{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
           "\"data_offsets\":[0,8]}}",
           "12345678");
  EXPECT_NE(readError(file).find("overflows"), std::string::npos);

  writeRaw(file, "{\"x\":{\"dtype\":\"F8\",\"shape\":[1],\"data_offsets\":[0,1]}}", "1");
  EXPECT_NE(readError(file).find("unsupported dtype"), std::string::npos);

  {
    std::ofstream out(file, std::ios::binary);
    uint64_t huge = uint64_t(1) << 40;
    out.write(reinterpret_cast<const char *>(&huge), 8);
  }
  EXPECT_NE(readError(file).find("exceeds the file"), std::string::npos);
  EXPECT_NE(readError(path("missing.safetensors")).find("cannot open"), std::string::npos);
  std::remove(file.c_str());
}

} // namespace
} // namespace tensorc
