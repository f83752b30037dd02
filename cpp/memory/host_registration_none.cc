// The CPU build's HostRegistration (memory/host_registration.h): no device, nothing to register.
#include "memory/host_registration.h"

namespace infernode {

std::unique_ptr<HostRegistration> HostRegistration::Make(const void*, size_t, DeviceStream*) { return nullptr; }

}  // namespace infernode
