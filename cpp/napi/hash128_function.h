// hash128(parts): the response cache's key hash (ts/cache/key.ts), typed in ts/native.ts.
// Main thread only (it reads JS values); the secret it keys the hash with is the process's.
#pragma once

#include <napi.h>

namespace infernode {

// hash128(parts: (string | ArrayBufferView)[]): XXH3-128 (cpp/core/hash128.h) of the parts in
// order, keyed with a random secret drawn once per process, as 32 lower-case hex digits. A
// string is hashed as its UTF-16 code units (exactly what JS holds: lone surrogates stay
// distinct, which UTF-8 would fold into U+FFFD); a view as its bytes, read in place.
// Throws a TypeError naming the part that is neither.
Napi::Value Hash128Function(const Napi::CallbackInfo& info);

}  // namespace infernode
