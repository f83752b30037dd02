# Fallback node-gyp build of the same cpp/ sources, CPU-only (no CUDA): for machines without
# cmake or nvcc. CI proves it still compiles and loads (.ci/run).
{
  "targets": [
    {
      "target_name": "infernode",
      "sources": [
        "<!@(node -e \"const g=require('fs');const p=require('path');const out=[];for(const d of ['core','gpu','memory','scheduling','engines','engines/onnx','napi']){for(const f of g.readdirSync(p.join('cpp',d))){if(f.endsWith('.cc'))out.push('cpp/'+d+'/'+f)}}console.log(out.join(' '))\")"
      ],
      "include_dirs": [
        "cpp",
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "<!(node scripts/ort-paths.js include)"
      ],
      "libraries": ["-ldl", "-lrt"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags_cc!": ["-fno-exceptions", "-fno-rtti"],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-Werror=return-type", "-Wno-unused-parameter"],
      "cflags!": ["-fno-exceptions"]
    }
  ]
}
