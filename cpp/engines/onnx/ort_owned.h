// Owning handles for ONNX Runtime objects: every object the engine creates is held by an OrtPtr
// from the moment ONNX Runtime hands it out, so no error path (an early RETURN_IF_ERROR, a failed
// allocation, an exception) can leak it. Releases go through the API table the object came from.
//
//   OrtPtr<OrtValue> value(api);
//   RETURN_IF_ERROR(runtime->Check(api->CreateTensorAsOrtValue(..., OutParam(value)), what));
//
// OutParam hands ONNX Runtime a T** and adopts what it wrote when the full expression ends (before
// RETURN_IF_ERROR looks at the status), so the object is owned even when the call that follows fails.
#pragma once

#include <onnxruntime_c_api.h>

#include <memory>

namespace infernode {

inline void OrtRelease(const OrtApi* api, OrtEnv* p) { api->ReleaseEnv(p); }
inline void OrtRelease(const OrtApi* api, OrtValue* p) { api->ReleaseValue(p); }
inline void OrtRelease(const OrtApi* api, OrtTensorTypeAndShapeInfo* p) { api->ReleaseTensorTypeAndShapeInfo(p); }
inline void OrtRelease(const OrtApi* api, OrtTypeInfo* p) { api->ReleaseTypeInfo(p); }
inline void OrtRelease(const OrtApi* api, OrtSessionOptions* p) { api->ReleaseSessionOptions(p); }
inline void OrtRelease(const OrtApi* api, OrtMemoryInfo* p) { api->ReleaseMemoryInfo(p); }
inline void OrtRelease(const OrtApi* api, OrtCUDAProviderOptionsV2* p) { api->ReleaseCUDAProviderOptions(p); }
inline void OrtRelease(const OrtApi* api, OrtTensorRTProviderOptionsV2* p) { api->ReleaseTensorRTProviderOptions(p); }
inline void OrtRelease(const OrtApi* api, OrtStatus* p) { api->ReleaseStatus(p); }

template <typename T>
struct OrtDeleter {
  const OrtApi* api = nullptr;
  void operator()(T* p) const {
    if (p != nullptr) OrtRelease(api, p);
  }
};

template <typename T>
class OrtPtr : public std::unique_ptr<T, OrtDeleter<T>> {
 public:
  explicit OrtPtr(const OrtApi* api, T* p = nullptr) : std::unique_ptr<T, OrtDeleter<T>>(p, OrtDeleter<T>{api}) {}
};

// A T** for an ONNX Runtime out-parameter; what ONNX Runtime stored there is adopted by `owner`
// when this temporary dies (the end of the full expression).
template <typename T>
class OrtOutParam {
 public:
  explicit OrtOutParam(OrtPtr<T>& owner) : owner_(owner) {}
  ~OrtOutParam() {
    if (raw_ != nullptr) owner_.reset(raw_);
  }
  OrtOutParam(const OrtOutParam&) = delete;
  OrtOutParam& operator=(const OrtOutParam&) = delete;
  operator T**() { return &raw_; }

 private:
  OrtPtr<T>& owner_;
  T* raw_ = nullptr;
};

template <typename T>
OrtOutParam<T> OutParam(OrtPtr<T>& owner) {
  return OrtOutParam<T>(owner);
}

}  // namespace infernode
