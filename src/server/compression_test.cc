#include "server/compression.h"

#include <zlib.h>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

std::string Gunzip(const std::string& data) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  std::string out(1 << 20, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  inflateEnd(&stream);
  return out;
}

TEST(AcceptsGzipTest, ReadsTheCodingsAndTheirQuality) {
  EXPECT_TRUE(AcceptsGzip("gzip, deflate, br"));
  EXPECT_TRUE(AcceptsGzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("br, deflate"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("xgzip"));
}

TEST(IsCompressibleTypeTest, TextJsonAndScriptsButNotImages) {
  EXPECT_TRUE(IsCompressibleType("application/json"));
  EXPECT_TRUE(IsCompressibleType("text/html; charset=utf-8"));
  EXPECT_TRUE(IsCompressibleType("text/javascript"));
  EXPECT_TRUE(IsCompressibleType("image/svg+xml"));
  EXPECT_FALSE(IsCompressibleType("text/event-stream"));
  EXPECT_FALSE(IsCompressibleType("image/png"));
  EXPECT_FALSE(IsCompressibleType(""));
}

TEST(GzipTest, RoundTrips) {
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += "{\"model_id\":\"hf:llama\",\"i\":" + std::to_string(i) + "}";
  const std::string packed = GzipBytes(text);
  EXPECT_LT(packed.size(), text.size() / 4);
  EXPECT_EQ(Gunzip(packed), text);
}

TEST(GzipIfAcceptedTest, CompressesOnlyWhatTheClientTakesAndIsWorthIt) {
  HttpRequest gzip_client;
  gzip_client.headers = {{"Accept-Encoding", "gzip, br"}};
  const std::string json = "[" + std::string(1000, '1') + "]";

  HttpResponse res;
  res.set_content(json, "application/json");
  GzipIfAccepted(gzip_client, res);
  EXPECT_EQ(res.get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(res.get_header_value("Vary"), "Accept-Encoding");
  EXPECT_EQ(Gunzip(res.body), json);

  HttpResponse plain;
  plain.set_content(json, "application/json");
  GzipIfAccepted(HttpRequest(), plain);
  EXPECT_FALSE(plain.has_header("Content-Encoding"));
  EXPECT_EQ(plain.body, json);

  HttpResponse small;
  small.set_content("{}", "application/json");
  GzipIfAccepted(gzip_client, small);
  EXPECT_EQ(small.body, "{}");

  HttpResponse image;
  image.set_content(std::string(1000, 'x'), "image/png");
  GzipIfAccepted(gzip_client, image);
  EXPECT_FALSE(image.has_header("Content-Encoding"));
}

}  // namespace
}  // namespace compatlab
