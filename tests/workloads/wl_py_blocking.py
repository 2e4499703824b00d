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

Each thread times its blocking calls and prints the truth line of tests/support/truth.h:
  truth tid=T function=F blocked_ns=N count=C waker_tid=W waker_function=G
Their times include the interpreter's re-taking of the GIL on the way out of the call, which
may block too: a thread can have more blocks than it counts, none outside its calls.

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

    def timed(self, call, *args):
        t0 = time.monotonic_ns()
        result = call(*args)
        ns = time.monotonic_ns() - t0
        if ns >= BLOCK_MIN_NS:
            self.ns += ns
            self.count += 1
        return result

    def truth(self):
        return (f"truth tid={self.tid} function={self.function} blocked_ns={self.ns} "
                f"count={self.count} waker_tid={self.waker_tid} waker_function={self.waker_function}")


def run_pair(wakee_blocks, waker_blocks, wakee, waker):
    """Runs wakee and waker in two threads of their own."""

    def wakee_main():
        wakee_blocks.tid = threading.get_native_id()
        wakee()

    def waker_main():
        waker_blocks.tid = threading.get_native_id()
        waker()

    threads = [threading.Thread(target=wakee_main), threading.Thread(target=waker_main)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wakee_blocks.waker_tid = waker_blocks.tid


def sleep_phase(count, seconds):
    sleeper = Blocks("time.sleep", "[hardirq]")

    def sleep_loop():
        sleeper.tid = threading.get_native_id()
        for _ in range(count):
            sleeper.timed(time.sleep, seconds)

    t = threading.Thread(target=sleep_loop)
    t.start()
    t.join()
    return [sleeper]


def select_phase(count, seconds):
    selector = Blocks("select.select", "os.write")
    writer = Blocks("time.sleep", "[hardirq]")
    r, w = os.pipe()

    def select_loop():
        for _ in range(count):
            selector.timed(select.select, [r], [], [])
            os.read(r, 1)

    def write_loop():
        for _ in range(count):
            writer.timed(time.sleep, seconds)
            os.write(w, b"x")

    run_pair(selector, writer, select_loop, write_loop)
    os.close(r)
    os.close(w)
    return [selector, writer]


def queue_phase(count, seconds):
    consumer = Blocks("queue.get", "queue.put")
    producer = Blocks("time.sleep", "[hardirq]")
    q = queue.Queue()

    def get_loop():
        for _ in range(count):
            consumer.timed(q.get)

    def put_loop():
        for i in range(count):
            producer.timed(time.sleep, seconds)
            q.put(i)

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
