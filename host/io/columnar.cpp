// The binary columnar population format (columnar.hpp).
#include "crawleval/columnar.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "crawleval/error.hpp"
#include "crawleval/output_file.hpp"

namespace crawleval {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .cpop format is little-endian");

constexpr char kMagic[8] = {'C', 'E', 'P', 'O', 'P', '0', '0', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kFlagX0 = 1, kFlagExpiry = 2;
constexpr std::size_t kHeaderBytes = 64;

struct Header {
  char magic[8];
  uint64_t n;
  uint32_t version, flags;
  uint64_t zero[5];
};
static_assert(sizeof(Header) == kHeaderBytes, "header layout");

uint64_t expected_size(uint64_t n, uint32_t flags) {
  return kHeaderBytes + 8 * n * (5 + ((flags & kFlagX0) ? 1 : 0)) +
         ((flags & kFlagExpiry) ? 4 * n : 0);
}

/// A read-only mapping of a whole file.
class Mapped {
 public:
  explicit Mapped(const std::string& path) : path_(printable(path, 256)) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(path_ + ": cannot open (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw InputError(path_ + ": not a regular file");
    }
    size_ = uint64_t(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
      if (p == MAP_FAILED) {
        ::close(fd_);
        throw InputError(path_ + ": cannot map (" + std::strerror(errno) + ")");
      }
      data_ = static_cast<const unsigned char*>(p);
    }
  }
  ~Mapped() {
    if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
    ::close(fd_);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;

  /// The header, checked.
  Header header() const {
    Header h{};
    if (size_ < 8 || std::memcmp(data_, kMagic, 8) != 0)
      throw InputError(path_ + ": not a crawleval columnar population (no CEPOP001 header)");
    if (size_ < kHeaderBytes)
      throw InputError(path_ + ": the file has " + std::to_string(size_) +
                       " bytes, less than its 64-byte header (truncated)");
    std::memcpy(&h, data_, sizeof h);
    if (h.version != kVersion)
      throw InputError(path_ + ": columnar format version " + std::to_string(h.version) +
                       " (this crawleval reads version 1)");
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
    if (count) std::memcpy(out.data(), data_ + offset, count * sizeof(T));
  }
  const unsigned char* data() const { return data_; }
  const std::string& name() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  const unsigned char* data_ = nullptr;
};

}  // namespace

bool is_columnar_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[8] = {};
  const bool yes = ::read(fd, magic, 8) == 8 && std::memcmp(magic, kMagic, 8) == 0;
  ::close(fd);
  return yes;
}

ColumnarHeader read_columnar_header(const std::string& path) {
  const Header h = Mapped(path).header();
  return ColumnarHeader{h.n, (h.flags & kFlagX0) != 0, (h.flags & kFlagExpiry) != 0};
}

Population read_columnar(const std::string& path, uint64_t first, uint64_t count) {
  const Mapped m(path);
  const Header h = m.header();
  if (first > h.n || count > h.n - first)
    throw Error("internal: slice [" + std::to_string(first) + ", +" + std::to_string(count) +
                ") of " + std::to_string(h.n) + " sources");
  Population pop;
  pop.origin = path;
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
  if (first > 0) std::memcpy(&before, m.data() + ids + 8 * (first - 1), 8);
  for (uint64_t k = 0; k < count; ++k) {
    if ((k > 0 || first > 0) && !(pop.id[k] > (k > 0 ? pop.id[k - 1] : before)))
      throw InputError(m.name() + ": source " + std::to_string(first + k) + ": field 'id': id " +
                       std::to_string(pop.id[k]) +
                       " does not follow the previous id (ids must be strictly ascending)");
  }
  return pop;
}

Population read_columnar(const std::string& path) {
  return read_columnar(path, 0, read_columnar_header(path).n);
}

void write_columnar(const Population& pop, const std::string& path) {
  const uint64_t n = pop.size();
  for (uint64_t k = 1; k < n; ++k)
    if (!(pop.id[k] > pop.id[k - 1]))
      throw InputError(printable(pop.origin, 256) + ": ids must be strictly ascending to write " +
                       printable(path, 256));
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.n = n;
  h.version = kVersion;
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
