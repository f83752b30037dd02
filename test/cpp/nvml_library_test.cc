// NVML loaded at run time (cpp/gpu/nvml_library.h): a host without the driver, or a library that
// is not NVML, gives UNAVAILABLE with the reason instead of failing the addon; where the driver
// is present, every device read has a GPU- uuid and plausible values.
#include <string>
#include <vector>

#include "gpu/gpu_metrics.h"
#include "gpu/nvml_library.h"
#include "harness.h"

using namespace infernode;

TEST(NvmlMissingLibraryIsUnavailableNamingIt) {
  std::unique_ptr<nvml::NvmlLibrary> library;
  Status status = nvml::NvmlLibrary::Open("libinfernode-no-such-nvml.so.1", &library);
  EXPECT_EQ(status.Code(), StatusCode::kUnavailable);
  EXPECT_CONTAINS(status.Message(), "cannot load NVML from 'libinfernode-no-such-nvml.so.1'");
  EXPECT_TRUE(library == nullptr);
}

TEST(NvmlLibraryWithoutTheEntryPointsIsUnavailable) {
  std::unique_ptr<nvml::NvmlLibrary> library;
  Status status = nvml::NvmlLibrary::Open("libm.so.6", &library);
  EXPECT_EQ(status.Code(), StatusCode::kUnavailable);
  EXPECT_CONTAINS(status.Message(), "'libm.so.6' does not export nvmlInit_v2");
  EXPECT_TRUE(library == nullptr);
}

TEST(GpuMetricsSourceKeepsWhyNvmlIsUnavailable) {
  GpuMetricsSource source("libinfernode-no-such-nvml.so.1");
  EXPECT_EQ(source.UnavailableReason(), std::string());
  std::vector<GpuDeviceMetrics> devices;
  EXPECT_EQ(source.Read(&devices).Code(), StatusCode::kUnavailable);
  EXPECT_CONTAINS(source.UnavailableReason(), "libinfernode-no-such-nvml.so.1");
  EXPECT_EQ(source.Read(&devices).Code(), StatusCode::kUnavailable);  // decided once, answered again
  EXPECT_TRUE(devices.empty());
}

// Runs on a GPU host; elsewhere the driver's library is absent and only the reason is checked.
TEST(NvmlReadsEveryDeviceWhereTheDriverIsPresent) {
  std::unique_ptr<nvml::NvmlLibrary> library;
  Status status = nvml::NvmlLibrary::Open(nvml::kDefaultLibrary, &library);
  if (!status.IsOk()) {
    EXPECT_EQ(status.Code(), StatusCode::kUnavailable);
    std::cerr << "    (no NVML here: " << status.Message() << ")\n";
    return;
  }
  for (const GpuDeviceMetrics& device : ReadGpuMetrics(*library)) {
    EXPECT_EQ(device.uuid.rfind("GPU-", 0), 0u);
    EXPECT_TRUE(device.memory_total_bytes.has_value() && device.memory_used_bytes.has_value());
    if (device.memory_total_bytes && device.memory_used_bytes) {
      EXPECT_TRUE(*device.memory_total_bytes > *device.memory_used_bytes);
    }
    if (device.utilization) EXPECT_TRUE(*device.utilization >= 0 && *device.utilization <= 1);
  }
}
