// Support: dtypes and half conversions, JSON, safetensors reading/writing and its rejections.
#include "tensorc/Support/DType.h"
#include "tensorc/Support/Json.h"
#include "tensorc/Support/Safetensors.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <unistd.h>

namespace tensorc {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType d :
       {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::I16,
        DType::I8, DType::U8, DType::U16, DType::U32, DType::U64, DType::Bool}) {
    EXPECT_EQ(parseDType(dtypeName(d)), d);
    EXPECT_EQ(parseSafetensorsDType(dtypeSafetensorsName(d)), d);
  }
  EXPECT_EQ(parseDType("torch.float32"), DType::F32);
  EXPECT_EQ(parseDType("torch.bfloat16"), DType::BF16);
  EXPECT_EQ(parseDType("torch.uint16"), DType::U16);
  EXPECT_EQ(parseDType("torch.uint32"), DType::U32);
  EXPECT_EQ(parseDType("torch.uint64"), DType::U64);
  EXPECT_EQ(parseSafetensorsDType("U64"), DType::U64);
  EXPECT_EQ(dtypeSize(DType::U32), 4u);
  EXPECT_FALSE(parseDType("f8"));
}

// Unsigned integers follow numpy: same signedness takes the wider, an unsigned with a signed
// integer the next signed type that holds both, and u64 with a signed integer f64.
TEST(DType, UnsignedPromotionFollowsNumpy) {
  EXPECT_EQ(promoteTypes(DType::U8, DType::U16), DType::U16);
  EXPECT_EQ(promoteTypes(DType::U64, DType::U32), DType::U64);
  EXPECT_EQ(promoteTypes(DType::U16, DType::I16), DType::I32);
  EXPECT_EQ(promoteTypes(DType::I16, DType::U16), DType::I32);
  EXPECT_EQ(promoteTypes(DType::U16, DType::I32), DType::I32);
  EXPECT_EQ(promoteTypes(DType::U32, DType::I32), DType::I64);
  EXPECT_EQ(promoteTypes(DType::U32, DType::I8), DType::I64);
  EXPECT_EQ(promoteTypes(DType::U8, DType::I64), DType::I64);
  EXPECT_EQ(promoteTypes(DType::U64, DType::I64), DType::F64);
  EXPECT_EQ(promoteTypes(DType::I8, DType::U64), DType::F64);
  EXPECT_EQ(promoteTypes(DType::Bool, DType::U32), DType::U32);
  EXPECT_EQ(promoteTypes(DType::U64, DType::F16), DType::F16);
  EXPECT_FALSE(isSignedInteger(DType::U64));
  EXPECT_TRUE(isIntegral(DType::U16));
}

TEST(Tensor, UnsignedGetAndSet) {
  Tensor t = Tensor::zerosUnchecked(DType::U64, {2});
  t.setDouble(0, 1.8e19); // above INT64_MAX: converts directly
  EXPECT_EQ(t.dataAs<uint64_t>()[0], uint64_t(1.8e19));
  EXPECT_EQ(t.getDouble(0), double(uint64_t(1.8e19)));
  t.setInt(1, -1); // bit-cast both ways
  EXPECT_EQ(t.dataAs<uint64_t>()[1], UINT64_MAX);
  EXPECT_EQ(t.getInt(1), -1);
  Tensor u16 = Tensor::zerosUnchecked(DType::U16, {1});
  u16.setInt(0, 65537); // wraps like the other narrow integers
  EXPECT_EQ(u16.getInt(0), 1);
  u16.setDouble(0, 40000.0);
  EXPECT_EQ(u16.getDouble(0), 40000.0);
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
  /// The file reader's error, after checking that the in-memory parser (the runtime's embedded
  /// weights) gives the same message for the same bytes.
  std::string readError(const std::string &file) {
    Expected<std::map<std::string, Tensor>> result = readSafetensors(file);
    std::ifstream in(file, std::ios::binary);
    if (in) {
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      Expected<std::map<std::string, Tensor>> parsed =
          parseSafetensors(bytes.data(), bytes.size(), nullptr);
      EXPECT_EQ(bool(parsed), bool(result));
      if (!parsed && !result) {
        EXPECT_EQ(file + ": " + parsed.error().message(), result.error().message());
      }
    }
    return result ? "" : result.error().message();
  }
};

TEST_F(Safetensors, RoundTripsEveryDType) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (DType d :
       {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::I16,
        DType::I8, DType::U8, DType::U16, DType::U32, DType::U64, DType::Bool}) {
    Tensor t = Tensor::zerosUnchecked(d, {2, 3});
    for (int64_t i = 0; i < 6; ++i)
      t.setDouble(i, double(i % 2 == 0 ? i : -i) *
                         (isUnsignedInteger(d) || d == DType::Bool ? -1 : 1));
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

// Another writer's unpadded header leaves an i64 tensor 4 bytes off its alignment: the reader
// copies it into aligned storage, values intact (reading it in place is undefined behaviour).
TEST_F(Safetensors, CopiesMisalignedTensors) {
  std::string file = path("misaligned.safetensors");
  std::string header = "{\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[4,20]}}";
  while ((8 + header.size()) % 8 != 0)
    header += ' ';
  int32_t a = -7;
  int64_t b[2] = {int64_t(1) << 40, -3};
  std::string data(reinterpret_cast<const char *>(&a), 4);
  data.append(reinterpret_cast<const char *>(b), 16);
  writeRaw(file, header, data);
  Expected<std::map<std::string, Tensor>> read = readSafetensors(file);
  ASSERT_TRUE(read) << read.error().message();
  const Tensor &tb = read->at("b");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tb.data()) % 8, 0u);
  EXPECT_EQ(tb.getInt(0), int64_t(1) << 40);
  EXPECT_EQ(tb.getInt(1), -3);
  EXPECT_EQ(read->at("a").getInt(0), -7);
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
