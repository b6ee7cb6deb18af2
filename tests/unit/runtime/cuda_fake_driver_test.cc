// The CUDA runtime's driver layer and device interface (driver.cc, device.cc) on a fake libcuda
// that keeps "device" memory on the host and runs no kernels: CI has no GPU, so this is where
// the symbol table, the copy routing, the streams and events hooks, the allocator behind the
// interface and the out-of-memory error through it are exercised. The fake is compiled here
// with the system's C compiler and loaded in a child process of this binary through
// $KILN_CUDA_LIBRARY; the child runs the CudaGpu tests (those that need kernels to run skip).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/cuda/driver.h"
#include "support/cache_child.h"

namespace kiln::runtime::cuda {
namespace {

// The driver entry points kiln loads, over host memory: one device ("Fake GPU", cc 9.0), 64 MiB
// of memory (while it reports 16 GiB in total, so asking twice the total runs out), copies with
// memcpy, streams and events that complete at once, launches that check only the block size.
constexpr const char* kFakeDriver = R"(
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
typedef unsigned long long P;
static size_t cap = (size_t)64 << 20, used = 0;
static size_t total_reported = (size_t)16 << 30;
static int dummy[16];
int cuInit(unsigned f){return 0;}
int cuDriverGetVersion(int*v){*v=13000;return 0;}
int cuGetErrorName(int r,const char**s){*s=r==2?"CUDA_ERROR_OUT_OF_MEMORY":r==1?"CUDA_ERROR_INVALID_VALUE":"CUDA_ERROR_X";return 0;}
int cuGetErrorString(int r,const char**s){*s="fake";return 0;}
int cuDeviceGetCount(int*c){*c=1;return 0;}
int cuDeviceGet(int*d,int o){*d=o;return o==0?0:101;}
int cuDeviceGetName(char*n,int l,int d){snprintf(n,l,"Fake GPU");return 0;}
int cuDeviceTotalMem_v2(size_t*b,int d){*b=total_reported;return 0;}
int cuDeviceGetAttribute(int*v,int a,int d){switch(a){case 1:*v=1024;break;case 10:*v=32;break;case 16:*v=132;break;case 38:*v=50<<20;break;case 75:*v=9;break;case 76:*v=0;break;case 81:*v=228<<10;break;case 97:*v=227<<10;break;default:*v=0;}return 0;}
int cuDevicePrimaryCtxRetain(void**c,int d){*c=&dummy[0];return 0;}
int cuCtxSetCurrent(void*c){return 0;}
int cuCtxSynchronize(void){return 0;}
typedef struct {size_t n;} H;
int cuMemAlloc_v2(P*p,size_t n){if(used+n>cap)return 2;char*m=aligned_alloc(4096,(n+4096+4095)/4096*4096);if(!m)return 2;((H*)m)->n=n;used+=n;*p=(P)(m+4096);return 0;}
int cuMemFree_v2(P p){char*m=(char*)p-4096;used-=((H*)m)->n;free(m);return 0;}
int cuMemGetInfo_v2(size_t*f,size_t*t){*f=cap-used;*t=cap;return 0;}
int cuMemHostAlloc(void**p,size_t n,unsigned fl){*p=malloc(n);return 0;}
int cuMemFreeHost(void*p){free(p);return 0;}
int cuMemcpyHtoDAsync_v2(P d,const void*s,size_t n,void*st){memcpy((void*)d,s,n);return 0;}
int cuMemcpyDtoHAsync_v2(void*d,P s,size_t n,void*st){memcpy(d,(void*)s,n);return 0;}
int cuMemcpyDtoDAsync_v2(P d,P s,size_t n,void*st){memmove((void*)d,(void*)s,n);return 0;}
int cuMemsetD8Async(P d,unsigned char v,size_t n,void*st){memset((void*)d,v,n);return 0;}
int cuStreamCreate(void**s,unsigned f){*s=malloc(1);return 0;}
int cuStreamDestroy_v2(void*s){free(s);return 0;}
int cuStreamSynchronize(void*s){return 0;}
int cuStreamQuery(void*s){return 0;}
int cuStreamWaitEvent(void*s,void*e,unsigned f){return 0;}
int cuEventCreate(void**e,unsigned f){*e=malloc(1);return 0;}
int cuEventDestroy_v2(void*e){free(e);return 0;}
int cuEventRecord(void*e,void*s){return 0;}
int cuEventSynchronize(void*e){return 0;}
int cuEventQuery(void*e){return 0;}
int cuEventElapsedTime_v2(float*ms,void*a,void*b){*ms=0.25f;return 0;}
int cuModuleLoadData(void**m,const void*img){*m=malloc(1);return 0;}
int cuModuleUnload(void*m){free(m);return 0;}
int cuModuleGetFunction(void**f,void*m,const char*n){*f=&dummy[1];return 0;}
int cuFuncSetAttribute(void*f,int a,int v){return 0;}
int cuFuncGetAttribute(int*v,int a,void*f){*v=a==4?32:0;return 0;}
int cuOccupancyMaxActiveBlocksPerMultiprocessor(int*n,void*f,int t,size_t sh){*n=t>0?2048/t:0;return 0;}
int cuLaunchKernel(void*f,unsigned gx,unsigned gy,unsigned gz,unsigned bx,unsigned by,unsigned bz,unsigned sh,void*s,void**a,void**e){return bx*by*bz>1024?1:0;}
)";

TEST(CudaFakeDriver, TheRuntimeRunsOnAFakeDriver) {
  if (available()) GTEST_SKIP() << "a CUDA GPU is present: the CudaGpu tests run on it";
  if (std::getenv("KILN_TEST_FAKE_CUDA")) GTEST_SKIP() << "already the child";
  std::string dir = (std::filesystem::temp_directory_path() / "kiln-fake-cuda-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::ofstream(dir + "/fake_cuda.c") << kFakeDriver;
  const std::string cc = "cc -shared -fPIC -O1 -o '" + dir + "/libcuda_fake.so' '" + dir + "/fake_cuda.c' > '" + dir +
                         "/cc.log' 2>&1";
  if (std::system(cc.c_str()) != 0) GTEST_SKIP() << "no C compiler for the fake driver: " << test::slurp(dir + "/cc.log");
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  ASSERT_GT(n, 0);
  self[n] = 0;
  const std::string child = "KILN_TEST_FAKE_CUDA=1 KILN_CUDA_LIBRARY='" + dir + "/libcuda_fake.so' '" + self +
                            "' --gtest_filter='CudaGpu.*:DeviceRegistry.*:TestDevice.DeviceWithout*' > '" + dir +
                            "/child.log' 2>&1";
  const int status = std::system(child.c_str());
  const std::string out = test::slurp(dir + "/child.log");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("cuda:0 Fake GPU, 132 SMs, 16.0 GiB, cc 9.0 (sm_90a)"), std::string::npos) << out;
  for (const char* t : {"CudaGpu.Properties", "CudaGpu.CopiesRoundTrip", "CudaGpu.AllocatorOnDeviceMemory",
                        "CudaGpu.OutOfMemoryIsAClearErrorAndLeavesTheProcessUsable", "CudaGpu.ThePublicApiAnswersAsTorchCuda"})
    EXPECT_NE(out.find(std::string("[       OK ] ") + t), std::string::npos) << t << "\n" << out;
  // Registered where the driver loads: the "no backend for cuda" tests step aside.
  EXPECT_NE(out.find("the CUDA driver loaded: CUDA has a backend here"), std::string::npos) << out;
  EXPECT_EQ(out.find("[  FAILED  ]"), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln::runtime::cuda
