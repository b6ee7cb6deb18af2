// The disk cache (docs/cache.md): content-addressed entries that outlive the process, for
// compiled kernels, tuned configs and whatever else is costly to rebuild.
//
//   const std::string key = runtime::cache::hash({source, compiler, flags, arch, runtime::cache::kiln_version()});
//   if (auto bytes = runtime::cache::get("tile-cpu", key + ".so")) ...   // a hit: the payload
//   else runtime::cache::put("tile-cpu", key + ".so", build());
//
// An entry is the file <dir>/<namespace>/<name>: the payload, then a 24-byte trailer (length,
// checksum, magic). A trailer rather than a header keeps a cached shared object loadable in
// place (dlopen ignores bytes after the ELF image). get() checks the trailer and the checksum, so
// a truncated or corrupt entry is a miss: it is logged (KILN_LOGS=cache), removed and rebuilt by
// the caller. put() writes a temporary file in the same folder, fsyncs it and renames it over
// the entry: readers see the old entry or the new one, never a part, and processes writing the
// same entry at once all leave a complete one.
//
// The folder is $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln. KILN_CACHE_DIR=
// (set and empty) or KILN_DISABLE_CACHE=1 turns the cache off: get() misses, put() stores nothing.
// The environment is read on every call, so tests point it at a temporary folder.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::runtime::cache {

// The cache folder; empty when the cache is off.
std::string dir();
bool enabled();

// The entry's payload, or nullopt (a miss: no entry, the cache is off, or the entry was corrupt,
// in which case it is removed). `name` is a file name: letters, digits and . _ + - only.
std::optional<std::string> get(std::string_view ns, std::string_view name);
// The path of a valid entry (checked as get() does), for files used in place (dlopen).
std::optional<std::string> get_path(std::string_view ns, std::string_view name);
// Stores the entry atomically; returns its path, or nullopt when the cache is off or the write
// failed (logged: a cache that cannot write is slower, not wrong).
std::optional<std::string> put(std::string_view ns, std::string_view name, std::string_view payload);
// Removes an entry (a payload that checked out but proved unusable, e.g. an object dlopen rejects).
void remove(std::string_view ns, std::string_view name);

// A 128-bit content hash of the parts (in order, each delimited) as 32 hex digits: the key of an
// entry. Not cryptographic: the folder is the user's own.
std::string hash(std::initializer_list<std::string_view> parts);

// kiln's version, part of every key (a new kiln never reads an old kiln's objects).
const char* kiln_version();
// This build of kiln: the file its code was loaded from (libkiln.so or the program), its size and
// modification time. Part of the keys of what kiln's own code produces (inductor's plans), which
// a rebuild with the same version may change; an object compiled from generated source needs
// only the version.
const std::string& build_id();

// What this process did with the cache since it started (tests and logs).
struct Stats {
  uint64_t hits = 0, misses = 0, corrupt = 0, writes = 0;
};
Stats stats();

}  // namespace kiln::runtime::cache
