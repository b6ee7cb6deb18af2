// Reading and writing tensors in the safetensors format (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length N, N bytes of JSON mapping each tensor's name to its
// dtype, shape and [begin, end) byte offsets into the data that follows, then the raw data.
#pragma once
#include <kiln/tensor.h>

#include <map>
#include <string>

namespace kiln {

using TensorMap = std::map<std::string, Tensor>;
using MetadataMap = std::map<std::string, std::string>;

// Writes the tensors (any layout; stored contiguous, little-endian) atomically: a temporary file
// in the same directory is renamed over `path`.
void save_safetensors(const TensorMap& tensors, const std::string& path, const MetadataMap& metadata = {},
                      SourceLoc loc = SourceLoc::current());
// Loads every tensor of the file into memory of its own (the file can change or go afterwards).
// mmap=true maps the file instead: tensors read the mapping directly (copy-on-write, so writing
// to them never changes the file) and keep it alive; faster for big files, but if another
// writer truncates the file while it is mapped, touching a tensor kills the process (SIGBUS).
TensorMap load_safetensors(const std::string& path, MetadataMap* metadata = nullptr, bool mmap = false,
                           SourceLoc loc = SourceLoc::current());

}  // namespace kiln
