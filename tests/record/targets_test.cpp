// -p's and -t's checks against /proc, on processes this test makes: a zombie is no target, a
// process whose main thread exited (pthread_exit) is one.
#include <gtest/gtest.h>

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "record/targets.h"

namespace offwake {
namespace {

// The state letter of /proc/PID/stat.
char state_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const size_t paren = line.rfind(") ");
  return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
}

// A child whose main thread exits while another thread sleeps on; killed at the end.
struct LeaderGone {
  pid_t pid = fork();
  LeaderGone() {
    if (pid != 0) return;
    pthread_t t;
    pthread_create(&t, nullptr, [](void*) -> void* { for (;;) pause(); }, nullptr);
    // The main thread's exit, as pthread_exit's, without its unwinding through gtest's frames
    // (which catch it).
    syscall(SYS_exit, 0);
  }
  ~LeaderGone() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

TEST(Targets, ARunningProcessAndThreadAreTargets) {
  EXPECT_FALSE(process_exited(getpid()));
  EXPECT_FALSE(thread_exited(getpid()));
  EXPECT_TRUE(check_process(getpid()).ok());
  EXPECT_TRUE(check_thread(getpid()).ok());
}

TEST(Targets, NoSuchProcessIsNoTarget) {
  EXPECT_TRUE(process_exited(4000000));
  EXPECT_TRUE(thread_exited(4000000));
  auto p = check_process(4000000);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message(), "process 4000000 does not exist");
  auto t = check_thread(4000000);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(), "thread 4000000 does not exist");
}

// -p takes processes: another thread's id says which process it is in.
TEST(Targets, AThreadIsNoProcess) {
  std::atomic<pid_t> live{0};
  std::atomic<bool> done{false};
  std::thread u([&] {
    live = static_cast<pid_t>(syscall(SYS_gettid));
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!live) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto c = check_process(static_cast<uint32_t>(live));
  done = true;
  u.join();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message(), std::to_string(live) + " is a thread of process " + std::to_string(getpid()) +
                                     ": use -p " + std::to_string(getpid()) + " for the process, or -t " +
                                     std::to_string(live) + " for the thread");
}

// A zombie is still in /proc (and kill(pid, 0) finds it), but it has exited.
TEST(Targets, AZombieHasExited) {
  const pid_t zombie = fork();
  ASSERT_GE(zombie, 0);
  if (zombie == 0) _exit(0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT), 0);
  EXPECT_EQ(state_of(zombie), 'Z');
  EXPECT_TRUE(process_exited(static_cast<uint32_t>(zombie)));
  EXPECT_TRUE(thread_exited(static_cast<uint32_t>(zombie)));
  auto p = check_process(static_cast<uint32_t>(zombie));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().message(), "process " + std::to_string(zombie) + " does not exist");
  EXPECT_FALSE(check_thread(static_cast<uint32_t>(zombie)).ok());
  waitpid(zombie, nullptr, 0);
}

// Its main thread is a zombie, its other thread runs: the process lives, the thread is gone.
TEST(Targets, AProcessWhoseMainThreadExitedLivesOn) {
  LeaderGone child;
  ASSERT_GE(child.pid, 0);
  for (int i = 0; i < 500 && state_of(child.pid) != 'Z'; ++i) usleep(10'000);
  ASSERT_EQ(state_of(child.pid), 'Z');
  EXPECT_FALSE(process_exited(static_cast<uint32_t>(child.pid)));
  EXPECT_TRUE(check_process(static_cast<uint32_t>(child.pid)).ok());
  EXPECT_TRUE(thread_exited(static_cast<uint32_t>(child.pid)));
}

}  // namespace
}  // namespace offwake
