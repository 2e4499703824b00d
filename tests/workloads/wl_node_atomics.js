// Node.js waiting in Atomics.wait(), for the tests of complete user stacks through code
// without unwind information (tests/e2e/complete_stacks_test.cpp): V8's builtins have no CFI,
// and its interpreter's and JIT's frames are in no binary at all; all of them keep frame
// pointers. The main thread waits once (not counted), then calls offwakeOuter(), which calls
// offwakeWait() COUNT times, each waiting MS milliseconds on a shared word nobody changes
// (woken by the timer), timed here. Run it with node --perf-basic-prof
// --interpreted-frames-native-stack, so that each JavaScript function has frames of its own,
// named in /tmp/perf-PID.map (which node leaves behind).
//
// Prints the truth line of tests/support/truth.h for offwakeOuter's waits, under the native
// frame every such wait passes through:
//   truth tid=PID function=v8::internal::Builtin_AtomicsWait blocked_ns=N count=COUNT
//         waker_tid=0 waker_function=[hardirq]
//
//   usage: node --perf-basic-prof --interpreted-frames-native-stack wl_node_atomics.js
//          [-n COUNT] [-m MS]
'use strict';

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 && at + 1 < process.argv.length ? Number(process.argv[at + 1]) : fallback;
}

const count = option('-n', 30);
const ms = option('-m', 5);
const word = new Int32Array(new SharedArrayBuffer(4));

function offwakeWait() {
  const t0 = process.hrtime.bigint();
  if (Atomics.wait(word, 0, 0, ms) !== 'timed-out') process.exit(2);
  return process.hrtime.bigint() - t0;
}

function offwakeOuter() {
  let ns = 0n;
  for (let i = 0; i < count; i++) ns += offwakeWait();
  return ns;
}

// Once before, not counted: whatever the first wait faults in (code of node's not yet read) is
// waited for here, not in the waits the truth counts.
offwakeWait();
const blocked = offwakeOuter();
console.log(`truth tid=${process.pid} function=v8::internal::Builtin_AtomicsWait blocked_ns=${blocked} ` +
            `count=${count} waker_tid=0 waker_function=[hardirq]`);
