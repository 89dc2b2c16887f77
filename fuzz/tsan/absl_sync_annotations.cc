// ThreadSanitizer annotations for Debian's uninstrumented Abseil synchronization
// (--config=tsan links this file into every test binary through --custom_malloc).
//
// libabsl_synchronization is built without -fsanitize=thread, so TSan does not see absl::Mutex,
// CondVar, Notification or BlockingCounter synchronize anything (they use atomics and futexes, not
// pthread calls); every access guarded by one would be reported as a race. This file defines
// the exported entry points of those classes in the executable, which the dynamic linker then
// binds in place of the library's (for calls from the program, from libabsl itself and from
// gRPC, whose own mutexes are absl::Mutex): each one tells TSan what it does
// (__tsan_mutex_pre_lock / post_lock / pre_unlock / post_unlock, __tsan_release / acquire) and
// calls the library's own function, found with dlsym(RTLD_NEXT).
//
// What stays invisible: synchronization inside uninstrumented libraries through their own
// atomics (gRPC's completion queues, protobuf's arenas); scripts/tsan.sh's suppressions cover
// the reports that causes, each named there.

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

#if !defined(__SANITIZE_THREAD__) && !(defined(__has_feature) && __has_feature(thread_sanitizer))
#error "absl_sync_annotations.cc is for --config=tsan builds only"
#endif

// TSan runtime's dynamic annotations (not declared by its public headers).
extern "C" {
void AnnotateIgnoreReadsBegin(const char* file, int line);
void AnnotateIgnoreReadsEnd(const char* file, int line);
void AnnotateIgnoreWritesBegin(const char* file, int line);
void AnnotateIgnoreWritesEnd(const char* file, int line);
}

namespace {

#define GRAPHOPT_STR2(x) #x
#define GRAPHOPT_STR(x) GRAPHOPT_STR2(x)

// The library's definition of absl::<inline namespace>::<suffix> ("5Mutex4LockEv"), a const
// member function when `is_const`.
template <typename Fn>
Fn Real(const char* suffix, bool is_const = false) {
  std::string name = is_const ? "_ZNK4absl" : "_ZN4absl";
#if ABSL_OPTION_USE_INLINE_NAMESPACE
  const char* ns = GRAPHOPT_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  name += std::to_string(std::strlen(ns)) + ns;
#endif
  name += suffix;
  void* f = dlsym(RTLD_NEXT, name.c_str());
  if (f == nullptr) {
    std::fprintf(stderr, "absl_sync_annotations: %s not found in libabsl\n", name.c_str());
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

// Entry points of the library call others (CondVar::WaitWithTimeout calls WaitWithDeadline,
// Notification::Notify locks a Mutex): only the outermost call on a thread is annotated.
thread_local int depth = 0;

struct Nested {
  Nested() { ++depth; }
  ~Nested() { --depth; }
  Nested(const Nested&) = delete;
  Nested& operator=(const Nested&) = delete;
  bool outermost() const { return depth == 1; }
};

template <typename Fn>
void Acquired(void* mu, unsigned flags, Fn lock) {
  Nested nested;
  if (nested.outermost()) __tsan_mutex_pre_lock(mu, flags);
  lock();
  if (nested.outermost()) __tsan_mutex_post_lock(mu, flags, 0);
}

template <typename Fn>
void Released(void* mu, unsigned flags, Fn unlock) {
  Nested nested;
  if (nested.outermost()) __tsan_mutex_pre_unlock(mu, flags);
  unlock();
  if (nested.outermost()) __tsan_mutex_post_unlock(mu, flags);
}

// A wait that releases `mu` and holds it again when it returns (CondVar::Wait, Mutex::Await).
template <typename Fn>
auto Waited(void* mu, Fn wait) {
  Nested nested;
  if (nested.outermost()) {
    __tsan_mutex_pre_unlock(mu, 0);
    __tsan_mutex_post_unlock(mu, 0);
  }
  auto result = wait();
  if (nested.outermost()) {
    __tsan_mutex_pre_lock(mu, 0);
    __tsan_mutex_post_lock(mu, 0, 0);
  }
  return result;
}

// A try-lock: `lock` returns whether it took the mutex.
template <typename Fn>
bool TryAcquired(void* mu, unsigned flags, Fn lock) {
  Nested nested;
  if (nested.outermost()) __tsan_mutex_pre_lock(mu, flags | __tsan_mutex_try_lock);
  const bool locked = lock();
  if (nested.outermost()) {
    __tsan_mutex_post_lock(
        mu, flags | __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  }
  return locked;
}

// Notification: a release before Notify, an acquire after a wait that saw it.
template <typename Fn>
void Published(void* n, Fn notify) {
  Nested nested;
  if (nested.outermost()) __tsan_release(n);
  notify();
}

template <typename Fn>
bool Observed(const void* n, Fn wait) {
  Nested nested;
  const bool notified = wait();
  if (nested.outermost() && notified) __tsan_acquire(const_cast<void*>(n));
  return notified;
}

constexpr unsigned kRead = __tsan_mutex_read_lock;

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex4LockEv");
  Acquired(this, 0, [&] { real(this); });
}

void Mutex::Unlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex6UnlockEv");
  Released(this, 0, [&] { real(this); });
}

bool Mutex::TryLock() {
  static const auto real = Real<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  return TryAcquired(this, 0, [&] { return real(this); });
}

void Mutex::ReaderLock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  Acquired(this, kRead, [&] { real(this); });
}

void Mutex::ReaderUnlock() {
  static const auto real = Real<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  Released(this, kRead, [&] { real(this); });
}

bool Mutex::ReaderTryLock() {
  static const auto real = Real<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  return TryAcquired(this, kRead, [&] { return real(this); });
}

void Mutex::LockWhen(const Condition& cond) {
  static const auto real =
      Real<void (*)(Mutex*, const Condition&)>("5Mutex8LockWhenERKNS0_9ConditionE");
  Acquired(this, 0, [&] { real(this, cond); });
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static const auto real =
      Real<void (*)(Mutex*, const Condition&)>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Acquired(this, kRead, [&] { real(this, cond); });
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, absl::Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  bool result = false;
  Acquired(this, 0, [&] { result = real(this, cond, timeout); });
  return result;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, absl::Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  bool result = false;
  Acquired(this, 0, [&] { result = real(this, cond, deadline); });
  return result;
}

void Mutex::Await(const Condition& cond) {
  static const auto real =
      Real<void (*)(Mutex*, const Condition&)>("5Mutex5AwaitERKNS0_9ConditionE");
  Waited(this, [&] {
    real(this, cond);
    return 0;
  });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, absl::Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Waited(this, [&] { return real(this, cond, timeout); });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  static const auto real = Real<bool (*)(Mutex*, const Condition&, absl::Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Waited(this, [&] { return real(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  static const auto real = Real<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  Waited(mu, [&] {
    real(this, mu);
    return 0;
  });
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, absl::Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  return Waited(mu, [&] { return real(this, mu, timeout); });
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  static const auto real = Real<bool (*)(CondVar*, Mutex*, absl::Time)>(
      "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return Waited(mu, [&] { return real(this, mu, deadline); });
}

// The library evaluates a waiter's Condition with the mutex held, but from inside its lock and
// unlock paths, where the annotations above have already said "released" (Await, CondVar) or
// not yet "acquired" (LockWhen), sometimes on the unlocking thread. Abseil's own TSan build
// re-annotates around each evaluation; that code is not in Debian's library, so the reads a
// condition makes are not checked at all (they would all be reported otherwise).
bool Condition::Eval() const {
  static const auto real = Real<bool (*)(const Condition*)>("9Condition4EvalEv", true);
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
  const bool result = real(this);
  AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  return result;
}

// Notify publishes everything written before it to whoever sees the notification, including
// through the inline HasBeenNotified(), whose load TSan cannot pair with the library's store.
void Notification::Notify() {
  static const auto real = Real<void (*)(Notification*)>("12Notification6NotifyEv");
  Published(this, [&] { real(this); });
}

void Notification::WaitForNotification() const {
  static const auto real =
      Real<void (*)(const Notification*)>("12Notification19WaitForNotificationEv", true);
  Observed(this, [&] {
    real(this);
    return true;
  });
}

bool Notification::WaitForNotificationWithTimeout(absl::Duration timeout) const {
  static const auto real = Real<bool (*)(const Notification*, absl::Duration)>(
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE", true);
  return Observed(this, [&] { return real(this, timeout); });
}

bool Notification::WaitForNotificationWithDeadline(absl::Time deadline) const {
  static const auto real = Real<bool (*)(const Notification*, absl::Time)>(
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE", true);
  return Observed(this, [&] { return real(this, deadline); });
}

// BlockingCounter: every decrement but the last only touches an atomic; each one publishes
// what its thread wrote to the thread that waits.
bool BlockingCounter::DecrementCount() {
  static const auto real =
      Real<bool (*)(BlockingCounter*)>("15BlockingCounter14DecrementCountEv");
  bool zero = false;
  Published(this, [&] { zero = real(this); });
  return zero;
}

void BlockingCounter::Wait() {
  static const auto real = Real<void (*)(BlockingCounter*)>("15BlockingCounter4WaitEv");
  Observed(this, [&] {
    real(this);
    return true;
  });
}

ABSL_NAMESPACE_END
}  // namespace absl
