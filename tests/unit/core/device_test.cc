// Device strings: parsed by name and index, printed back the same way.
#include <gtest/gtest.h>
#include <kiln/device.h>
#include <kiln/error.h>

namespace kiln {
namespace {

TEST(Device, ParsesTypeAndIndex) {
  EXPECT_EQ(Device("cpu"), kCPU);
  EXPECT_EQ(Device("cpu:0"), kCPU);
  EXPECT_EQ(Device("cuda"), Device(DeviceType::CUDA, 0));
  EXPECT_EQ(Device("cuda:3"), Device(DeviceType::CUDA, 3));
  EXPECT_EQ(Device("privateuseone:1"), Device(DeviceType::PrivateUse1, 1));
}

TEST(Device, PrintsTypeAndIndex) {
  EXPECT_EQ(kCPU.str(), "cpu");
  EXPECT_EQ(Device("cuda").str(), "cuda:0");
  EXPECT_EQ(Device(DeviceType::PrivateUse1, 2).str(), "privateuseone:2");
  for (int t = 1; t < kNumDeviceTypes; ++t) {  // every non-CPU type round-trips through its string
    const Device d(DeviceType(t), 1);
    EXPECT_EQ(Device(d.str()), d) << d.str();
  }
}

TEST(Device, BadStringsAreClearErrors) {
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:99999", "cpu:1", "CPU", ""}) {
    try {
      Device d(bad);
      ADD_FAILURE() << "'" << bad << "' parsed as " << d.str();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad device string '" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kiln
