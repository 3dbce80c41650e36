// The binary columnar population format (columnar.hpp).
#include "crawleval/io/columnar.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "crawleval/base/error.hpp"
#include "crawleval/io/output_file.hpp"

namespace crawleval {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .cpop format is little-endian");

constexpr char kMagic[8] = {'C', 'E', 'P', 'O', 'P', '0', '0', '1'};
// Version 2 adds first_id (a slice of a larger population); a population whose first_id is 0 is
// still written as version 1, byte for byte what earlier crawlevals wrote and read.
constexpr uint32_t kVersion = 2;
constexpr uint32_t kFlagX0 = 1, kFlagExpiry = 2;
constexpr std::size_t kHeaderBytes = 64;

struct Header {
  char magic[8];
  uint64_t n;
  uint32_t version, flags;
  uint64_t first_id;  ///< version 2: the global id of source 0 (version 1: zero)
  uint64_t zero[4];
};
static_assert(sizeof(Header) == kHeaderBytes, "header layout");

uint64_t expected_size(uint64_t n, uint32_t flags) {
  return kHeaderBytes + 8 * n * (5 + ((flags & kFlagX0) ? 1 : 0)) +
         ((flags & kFlagExpiry) ? 4 * n : 0);
}

/// Where a .cpop's bytes come from: a file read with pread (a file that shrinks while it is read
/// gives short reads, reported as bad input, where a memory mapping would die of SIGBUS), or bytes
/// already in memory (a pipe, read once).
class Bytes {
 public:
  /// A regular file.
  explicit Bytes(const std::string& path) : path_(printable(path, 256)) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(path_ + ": cannot open (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw InputError(path_ + ": not a regular file");
    }
    size_ = uint64_t(st.st_size);
  }
  /// Bytes read from a stream.
  Bytes(std::string_view data, const std::string& origin)
      : path_(printable(origin, 256)), size_(data.size()), data_(data) {}
  ~Bytes() {
    if (fd_ >= 0) ::close(fd_);
  }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;

  /// Exactly `bytes` bytes at `offset`, or InputError.
  void read(uint64_t offset, uint64_t bytes, void* out) const {
    if (bytes == 0) return;
    if (fd_ < 0) {
      if (offset > data_.size() || bytes > data_.size() - offset)
        throw InputError(path_ + ": truncated");
      std::memcpy(out, data_.data() + offset, bytes);
      return;
    }
    auto* p = static_cast<unsigned char*>(out);
    while (bytes > 0) {
      const std::size_t ask = std::size_t(std::min<uint64_t>(bytes, uint64_t(1) << 30));
      const ssize_t got = ::pread(fd_, p, ask, off_t(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw InputError(path_ + ": read error (" + std::strerror(errno) + ")");
      if (got == 0) {
        struct stat st {};
        const uint64_t now = ::fstat(fd_, &st) == 0 ? uint64_t(st.st_size) : 0;
        throw InputError(path_ + ": the file shrank while it was read (" + std::to_string(now) +
                         " bytes now, " + std::to_string(size_) + " when it was opened)");
      }
      p += got, offset += uint64_t(got), bytes -= uint64_t(got);
    }
  }

  /// The header, checked.
  Header header() const {
    Header h{};
    char magic[8] = {};
    if (size_ >= 8) read(0, 8, magic);
    if (size_ < 8 || std::memcmp(magic, kMagic, 8) != 0)
      throw InputError(path_ + ": not a crawleval columnar population (no CEPOP001 header)");
    if (size_ < kHeaderBytes)
      throw InputError(path_ + ": the file has " + std::to_string(size_) +
                       " bytes, less than its 64-byte header (truncated)");
    read(0, sizeof h, &h);
    if (h.version != 1 && h.version != kVersion)
      throw InputError(path_ + ": columnar format version " + std::to_string(h.version) +
                       " (this crawleval reads versions 1 and 2)");
    if (h.version == 1) h.first_id = 0;
    if (h.first_id >= kMaxGlobalId || h.n > kMaxGlobalId - h.first_id)
      throw InputError(path_ + ": the header's first_id " + std::to_string(h.first_id) + " + " +
                       std::to_string(h.n) + " sources pass 2^63");
    if (h.flags & ~(kFlagX0 | kFlagExpiry))
      throw InputError(path_ + ": unknown column flags " + std::to_string(h.flags));
    if (h.n > (uint64_t(1) << 40) || expected_size(h.n, h.flags) != size_)
      throw InputError(path_ + ": the header says " + std::to_string(h.n) + " sources (" +
                       std::to_string(expected_size(h.n, h.flags)) + " bytes) but the file has " +
                       std::to_string(size_) + " bytes (truncated or damaged)");
    return h;
  }
  template <class T>
  void copy(uint64_t offset, uint64_t count, std::vector<T>& out) const {
    out.resize(count);
    read(offset, count * sizeof(T), out.data());
  }
  const std::string& name() const { return path_; }
  uint64_t size() const { return size_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string_view data_;
};

}  // namespace

namespace detail {
void (*columnar_after_header)(const std::string& path) = nullptr;
}

namespace {

/// Sources [first, first + count) of a .cpop.
Population read_slice(const Bytes& m, const std::string& origin, uint64_t first, uint64_t count) {
  const Header h = m.header();
  if (detail::columnar_after_header) detail::columnar_after_header(origin);
  if (first > h.n || count > h.n - first)
    throw Error("internal: slice [" + std::to_string(first) + ", +" + std::to_string(count) +
                ") of " + std::to_string(h.n) + " sources");
  Population pop;
  pop.origin = origin;
  pop.first_id = h.first_id;
  const uint64_t col = 8 * h.n;
  uint64_t at = kHeaderBytes;
  m.copy(at + 8 * first, count, pop.lambda), at += col;
  m.copy(at + 8 * first, count, pop.xi), at += col;
  m.copy(at + 8 * first, count, pop.mu), at += col;
  m.copy(at + 8 * first, count, pop.cost), at += col;
  const uint64_t ids = at;
  m.copy(at + 8 * first, count, pop.id), at += col;
  if (h.flags & kFlagX0) m.copy(at + 8 * first, count, pop.x0), at += col;
  if (h.flags & kFlagExpiry) m.copy(at + 4 * first, count, pop.expiry);
  // Ids ascend strictly, within the slice and from the source before it.
  uint64_t before = 0;
  if (first > 0) m.read(ids + 8 * (first - 1), 8, &before);
  for (uint64_t k = 0; k < count; ++k) {
    if ((k > 0 || first > 0) && !(pop.id[k] > (k > 0 ? pop.id[k - 1] : before)))
      throw InputError(m.name() + ": source " + std::to_string(first + k) + ": field 'id': id " +
                       std::to_string(pop.id[k]) +
                       " does not follow the previous id (ids must be strictly ascending)");
  }
  return pop;
}

}  // namespace

bool is_columnar_file(const std::string& path) {
  // Only a regular file is sniffed: reading the magic from a pipe would consume it (the caller
  // reads a stream once and looks at its first bytes: columnar_magic).
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[8] = {};
  const bool yes = ::pread(fd, magic, 8, 0) == 8 && columnar_magic(std::string_view(magic, 8));
  ::close(fd);
  return yes;
}

bool columnar_magic(std::string_view data) {
  return data.size() >= 8 && std::memcmp(data.data(), kMagic, 8) == 0;
}

ColumnarHeader read_columnar_header(const std::string& path) {
  const Bytes m(path);
  const Header h = m.header();
  ColumnarHeader out{h.n, (h.flags & kFlagX0) != 0, (h.flags & kFlagExpiry) != 0};
  out.file_bytes = m.size();
  out.first_id = h.first_id;
  return out;
}

uint64_t columnar_digest(const std::string& path, const std::vector<uint64_t>& positions) {
  const Bytes m(path);
  const Header h = m.header();
  uint64_t d = 1469598103934665603ull;
  auto mix = [&](const void* p, std::size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t k = 0; k < bytes; ++k) d = (d ^ b[k]) * 1099511628211ull;
  };
  mix(&h, sizeof h);
  const uint64_t size = m.size();
  mix(&size, sizeof size);
  const int columns = 5 + ((h.flags & kFlagX0) ? 1 : 0);
  for (uint64_t i : positions) {
    if (i >= h.n) continue;
    for (int c = 0; c < columns; ++c) {
      unsigned char v[8];
      m.read(kHeaderBytes + 8 * h.n * uint64_t(c) + 8 * i, 8, v);
      mix(v, 8);
    }
    if (h.flags & kFlagExpiry) {
      unsigned char v[4];
      m.read(kHeaderBytes + 8 * h.n * uint64_t(columns) + 4 * i, 4, v);
      mix(v, 4);
    }
  }
  return d;
}

Population read_columnar(const std::string& path, uint64_t first, uint64_t count) {
  return read_slice(Bytes(path), path, first, count);
}

Population read_columnar(const std::string& path) {
  const Bytes m(path);
  return read_slice(m, path, 0, m.header().n);
}

Population parse_columnar(std::string_view data, const std::string& origin) {
  const Bytes m(data, origin);
  return read_slice(m, origin, 0, m.header().n);
}

void write_columnar(const Population& pop, const std::string& path) {
  if (!pop.observe.empty())
    throw InputError(printable(pop.origin, 256) +
                     ": the .cpop format has no observe column (mixed observation): write a CSV");
  const uint64_t n = pop.size();
  for (uint64_t k = 1; k < n; ++k)
    if (!(pop.id[k] > pop.id[k - 1]))
      throw InputError(printable(pop.origin, 256) + ": ids must be strictly ascending to write " +
                       printable(path, 256));
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.n = n;
  h.version = pop.first_id ? kVersion : 1;
  h.first_id = pop.first_id;
  h.flags = (pop.x0.empty() ? 0 : kFlagX0) | (pop.expiry.empty() ? 0 : kFlagExpiry);
  OutputFile file(path, "--out");
  std::ostream& os = file.stream();
  os.write(reinterpret_cast<const char*>(&h), sizeof h);
  auto put = [&](const auto& v) {
    os.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(v[0])));
  };
  put(pop.lambda), put(pop.xi), put(pop.mu), put(pop.cost), put(pop.id);
  if (!pop.x0.empty()) put(pop.x0);
  if (!pop.expiry.empty()) put(pop.expiry);
  file.commit();
}

}  // namespace crawleval
