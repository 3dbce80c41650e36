// Output files and the interrupt handler (include/crawleval/io/output_file.hpp).
#include "crawleval/io/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <streambuf>

#include "crawleval/base/error.hpp"

namespace crawleval {

namespace {

// ---- what the signal handler reads (fixed-size, written outside the handler) ----------------

constexpr int kSlots = 64;
constexpr std::size_t kPathMax = 4096;

struct Slot {
  char path[kPathMax];
  volatile std::sig_atomic_t used;
};
Slot g_temporaries[kSlots];  ///< unfinished outputs' temporary files, removed on a signal
Slot g_complete[kSlots];     ///< outputs already complete (named in the message)
char g_program[64] = "crawleval";
std::mutex g_mutex;  ///< serialises registration (not taken by the handler)

int take_slot(Slot* slots, const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int k = 0; k < kSlots; ++k)
    if (!slots[k].used) {
      const std::size_t n = std::min(path.size(), kPathMax - 1);
      std::memcpy(slots[k].path, path.data(), n);
      slots[k].path[n] = '\0';
      slots[k].used = 1;
      return k;
    }
  return -1;  // more outputs than slots: that one is not named / removed on a signal
}

void release_slot(Slot* slots, int k) {
  if (k >= 0) slots[k].used = 0;
}

void say(const char* s) {
  const std::size_t n = std::strlen(s);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(2, s + done, n - done);
    if (w <= 0) return;
    done += std::size_t(w);
  }
}

extern "C" void on_interrupt(int sig) {
  bool removed = false;
  for (Slot& s : g_temporaries)
    if (s.used) ::unlink(s.path), removed = true;
  say(g_program);
  say(": interrupted by ");
  say(sig == SIGINT ? "SIGINT" : "SIGTERM");
  if (const char* activity = current_activity(); activity[0]) {
    say(" while ");
    say(activity);
  }
  say(removed ? "; unfinished outputs removed" : "");
  bool any = false;
  for (Slot& s : g_complete)
    if (s.used) {
      say(any ? ", " : "; complete and kept: ");
      say(s.path);
      any = true;
    }
  if (!any) say("; no output was written");
  say("\n");
  ::_exit(128 + sig);
}

// ---- the target --------------------------------------------------------------------------------

enum class Kind { stdout_stream, direct, replace };

struct Target {
  Kind kind = Kind::replace;
  std::string path;  ///< resolved (a symbolic link's target)
  std::string dir;   ///< where the temporary goes
  mode_t mode = 0644;
};

std::string quoted(const std::string& path) { return "'" + printable(path, 256) + "'"; }

std::string dir_of(const std::string& p) {
  const std::size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string base_of(const std::string& p) {
  const std::size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

mode_t default_mode() {
  static const mode_t mode = [] {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return mode_t(0666 & ~mask);
  }();
  return mode;
}

Target resolve(const std::string& path, const std::string& option) {
  Target t;
  if (path == "-") {
    t.kind = Kind::stdout_stream;
    return t;
  }
  if (path.empty()) throw InputError(option + ": the file name is empty");
  t.path = path;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    if (::stat(path.c_str(), &st) != 0)
      throw InputError(option + " " + quoted(path) + " is a symbolic link to a missing file (" +
                       std::strerror(errno) + ")");
    if (S_ISREG(st.st_mode)) {  // replace the file the link names (/dev/stdout may name a pipe)
      char* real = ::realpath(path.c_str(), nullptr);
      if (!real) throw InputError(option + " " + quoted(path) + ": " + std::strerror(errno));
      t.path = real;
      std::free(real);
    }
  }
  if (::stat(t.path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError(option + " " + quoted(path) + " is a directory");
    if (!S_ISREG(st.st_mode)) {  // a device, a FIFO, a socket: written in place
      t.kind = Kind::direct;
      return t;
    }
    if ((st.st_mode & 0222) == 0)
      throw InputError(option + " " + quoted(path) + " is read-only; it is not replaced");
    if (::access(t.path.c_str(), W_OK) != 0)
      throw InputError(option + " " + quoted(path) + ": " + std::strerror(errno));
    t.mode = st.st_mode & 07777;
  } else if (errno == ENOENT) {
    t.mode = default_mode();
  } else {
    throw InputError(option + " " + quoted(path) + ": " + std::strerror(errno));
  }
  t.kind = Kind::replace;
  t.dir = dir_of(t.path);
  return t;
}

/// Creates an exclusive temporary beside the target; returns its descriptor (-1 and errno set).
int make_temporary(const Target& t, std::string* name) {
  std::string tmpl = t.dir + "/." + base_of(t.path) + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd >= 0) *name = tmpl;
  return fd;
}

/// A stream buffer over a file descriptor that remembers the first write error.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  int error() const { return error_; }
  bool flush_all() { return drain(); }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    while (p < pptr()) {
      const ssize_t w = ::write(fd_, p, std::size_t(pptr() - p));
      if (w < 0) {
        if (errno == EINTR) continue;
        if (!error_) error_ = errno;
        setp(buf_, buf_ + sizeof buf_);
        return false;
      }
      p += w;
    }
    setp(buf_, buf_ + sizeof buf_);
    return error_ == 0;
  }
  int fd_;
  int error_ = 0;
  char buf_[1 << 16];
};

}  // namespace

void check_output(const std::string& path, const std::string& option) {
  const Target t = resolve(path, option);
  if (t.kind == Kind::direct) {  // not opened: closing a FIFO would end its reader
    if (::access(t.path.c_str(), W_OK) != 0)
      throw InputError(option + " " + quoted(path) + ": " + std::strerror(errno));
    return;
  }
  if (t.kind == Kind::replace) {
    std::string probe;
    const int fd = make_temporary(t, &probe);
    if (fd < 0)
      throw InputError(option + " " + quoted(path) + ": cannot create files in " + quoted(t.dir) +
                       ": " + std::strerror(errno));
    ::close(fd);
    ::unlink(probe.c_str());
  }
}

struct OutputFile::Impl {
  Target target;
  std::string shown, tmp;
  int fd = -1, slot = -1;
  bool committed = false;
  std::unique_ptr<FdBuf> buf;
  std::unique_ptr<std::ostream> os;
};

OutputFile::OutputFile(const std::string& path, const std::string& option)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.target = resolve(path, option);
  m.shown = path == "-" ? "standard output" : quoted(path);
  std::cout
      .flush();  // what the program printed comes before this output's bytes on a shared stream
  switch (m.target.kind) {
    case Kind::stdout_stream:
      std::cout.flush();
      m.fd = 1;
      break;
    case Kind::direct:
      m.fd = ::open(m.target.path.c_str(), O_WRONLY | O_CLOEXEC);
      if (m.fd < 0) throw Error("cannot write " + m.shown + ": " + std::strerror(errno));
      break;
    case Kind::replace:
      m.fd = make_temporary(m.target, &m.tmp);
      if (m.fd < 0) {
        // A missing or unwritable directory is the path given (check_output's message); a full
        // disk or a lack of descriptors is not.
        const int err = errno;
        if (err == ENOENT || err == ENOTDIR || err == EACCES || err == EPERM || err == EROFS)
          throw InputError(option + " " + quoted(path) + ": cannot create files in " +
                           quoted(m.target.dir) + ": " + std::strerror(err));
        throw Error("cannot create a file in " + quoted(m.target.dir) + " for " + m.shown + ": " +
                    std::strerror(err));
      }
      m.slot = take_slot(g_temporaries, m.tmp);
      ::fchmod(m.fd, m.target.mode);
      break;
  }
  m.buf = std::make_unique<FdBuf>(m.fd);
  m.os = std::make_unique<std::ostream>(m.buf.get());
}

OutputFile::~OutputFile() {
  Impl& m = *impl_;
  if (m.committed) return;
  if (m.target.kind != Kind::stdout_stream && m.fd >= 0) ::close(m.fd);
  if (m.target.kind == Kind::replace) {
    ::unlink(m.tmp.c_str());
    release_slot(g_temporaries, m.slot);
  }
}

std::ostream& OutputFile::stream() { return *impl_->os; }

void OutputFile::commit() {
  Impl& m = *impl_;
  m.os->flush();
  int err = m.buf->flush_all() ? 0 : m.buf->error();
  if (!err && !*m.os) err = EIO;
  if (m.target.kind != Kind::stdout_stream) {
    if (::close(m.fd) != 0 && !err) err = errno;
    m.fd = -1;
  }
  if (err) throw Error("writing " + m.shown + " failed: " + std::strerror(err));
  if (m.target.kind == Kind::replace) {
    if (::rename(m.tmp.c_str(), m.target.path.c_str()) != 0)
      throw Error("cannot move the finished " + m.shown + " into place: " + std::strerror(errno));
    release_slot(g_temporaries, m.slot);
  }
  m.committed = true;
  if (m.target.kind != Kind::stdout_stream) take_slot(g_complete, m.target.path);
}

void install_interrupt_handlers(const char* program) {
  std::strncpy(g_program, program, sizeof g_program - 1);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace crawleval
