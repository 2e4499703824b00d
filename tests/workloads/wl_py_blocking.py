"""Python 3.11 blocking in time.sleep, select.select and queue.get, for the tests of complete
user stacks (tests/e2e/complete_stacks_test.cpp, issue 23): Debian's interpreter has no frame
pointers. Run it with /usr/bin/python3.11 (`python3` may be another interpreter).

Three phases, one after the other, each in threads of its own that main starts and joins:
  sleeper           time.sleep(MS) COUNT times, woken by the timer;
  selector, writer  select.select() on a pipe, woken by the writer's os.write() after
                    time.sleep(MS);
  consumer, producer  queue.Queue.get(), woken by the producer's put() after time.sleep(MS).
A waker pauses before each wakeup, so that its wakee is asleep by then; a call back within
1 ms was not a block the waker caused, and is not counted. (The C workloads ask the kernel
whether a call blocked, tests/workloads/wl_common.h's wl_blocks_so_far; here its count would
take in the interpreter's waits for the GIL, below.)

Each thread times its whole loop of calls, without a gap, and prints the truth line of
tests/support/truth.h:
  truth tid=T function=F blocked_ns=N count=C waker_tid=W waker_function=G
N runs from before the first call to after the last, so that every block of the thread's from
then on is in it: the interpreter's waits for the GIL too, wherever it hands the GIL over (on the
way out of a call, after os.write() or q.put(), or at any bytecode when another thread has
waited 5 ms for it). N leaves out the thread's CPU time in the loop (time.thread_time_ns()):
the producer's put() and its way into time.sleep() run 0.2 to 0.5 ms an iteration. The time
it waits runnable to run again after a block is in N, as in a recorded block; time it waits
preempted is in N too, and no block: run the workload SCHED_FIFO (chrt -f 1) where that matters.
C counts the iterations that took 1 ms or more: the GIL's waits may add blocks, so a thread can
have more blocks than C. Outside N: a new thread's wait for the GIL before its first statement
(main holds it while it starts the thread), a fraction of a millisecond, and the C library's
exit of the thread, which run_threads() keeps from waiting on the next phase. Timed call by
call and without run_threads(), a thread was recorded with up to 10.8 ms (5.4%) more than its
truth, in one CI run of the test.

  usage: python3.11 wl_py_blocking.py [-n COUNT] [-m MS] [-g] [--prefault]
  -g: print "ready pid=PID" and wait for SIGUSR1 before starting (recorders attach first).
  --prefault: lock all memory in, present and future (mlockall), so that every page of every
     thread's stack is there. For perf record --call-graph dwarf, whose copy of a user stack
     stops at the first page that is not: select.select's C frame is 49 KB, mostly never
     written, and perf's DWARF unwinding would end inside it.
"""
import argparse
import ctypes
import os
import queue
import select
import signal
import sys
import threading
import time

BLOCK_MIN_NS = 1_000_000


class Blocks:
    """What one thread measured of its blocking calls."""

    def __init__(self, function, waker_function):
        self.function, self.waker_function = function, waker_function
        self.tid, self.ns, self.count = 0, 0, 0
        self.waker_tid = 0

    def loop(self, count, body):
        """Runs body() count times, timed from before the first run to after the last, less the
        thread's own CPU time in between."""
        cpu = time.thread_time_ns()
        start = last = time.monotonic_ns()
        for _ in range(count):
            body()
            now = time.monotonic_ns()
            self.count += now - last >= BLOCK_MIN_NS
            last = now
        self.ns += (last - start) - (time.thread_time_ns() - cpu)

    def truth(self):
        return (f"truth tid={self.tid} function={self.function} blocked_ns={self.ns} "
                f"count={self.count} waker_tid={self.waker_tid} waker_function={self.waker_function}")


def run_threads(threads):
    """Starts the threads and returns once they have left the kernel, not only Python: a thread
    that Python's join() has seen end still runs the C library's exit, whose madvise() of the
    thread's stack waited 3.6 ms behind main's pthread_create() of the next phase's thread
    (its mprotect() of a stack mlockall() populates), as perf offwake --timeline showed: a block
    outside the thread's timed loop."""
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for t in threads:
        while os.path.exists(f"/proc/self/task/{t.native_id}"):
            time.sleep(0.001)


def run_pair(wakee_blocks, waker_blocks, wakee, waker):
    """Runs wakee and waker in two threads of their own."""

    def wakee_main():
        wakee_blocks.tid = threading.get_native_id()
        wakee()

    def waker_main():
        waker_blocks.tid = threading.get_native_id()
        waker()

    run_threads([threading.Thread(target=wakee_main), threading.Thread(target=waker_main)])
    wakee_blocks.waker_tid = waker_blocks.tid


def sleep_phase(count, seconds):
    sleeper = Blocks("time.sleep", "[hardirq]")

    def sleep_loop():
        sleeper.tid = threading.get_native_id()
        sleeper.loop(count, lambda: time.sleep(seconds))

    run_threads([threading.Thread(target=sleep_loop)])
    return [sleeper]


def select_phase(count, seconds):
    selector = Blocks("select.select", "os.write")
    writer = Blocks("time.sleep", "[hardirq]")
    r, w = os.pipe()

    def select_and_read():
        select.select([r], [], [])
        os.read(r, 1)

    def sleep_and_write():
        time.sleep(seconds)
        os.write(w, b"x")

    def select_loop():
        selector.loop(count, select_and_read)

    def write_loop():
        writer.loop(count, sleep_and_write)

    run_pair(selector, writer, select_loop, write_loop)
    os.close(r)
    os.close(w)
    return [selector, writer]


def queue_phase(count, seconds):
    consumer = Blocks("queue.get", "queue.put")
    producer = Blocks("time.sleep", "[hardirq]")
    q = queue.Queue()

    def sleep_and_put():
        time.sleep(seconds)
        q.put(None)

    def get_loop():
        consumer.loop(count, q.get)

    def put_loop():
        producer.loop(count, sleep_and_put)

    run_pair(consumer, producer, get_loop, put_loop)
    return [consumer, producer]


def lock_memory():
    mcl_current, mcl_future = 1, 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mlockall(mcl_current | mcl_future) != 0:
        sys.exit(f"mlockall: {os.strerror(ctypes.get_errno())}")


def wait_for_go():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    print(f"ready pid={os.getpid()}", flush=True)
    signal.sigwait({signal.SIGUSR1})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=10)
    parser.add_argument("-m", type=int, default=20)
    parser.add_argument("-g", action="store_true")
    parser.add_argument("--prefault", action="store_true")
    args = parser.parse_args()
    if args.prefault:
        lock_memory()
    if args.g:
        wait_for_go()
    seconds = args.m / 1000
    blocks = sleep_phase(args.n, seconds) + select_phase(args.n, seconds) + queue_phase(args.n, seconds)
    for b in blocks:
        print(b.truth())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
