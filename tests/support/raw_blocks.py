# perf script -s: one line per offwake-time sample, decoded by perf's own reader and this
# script, not by ours:
#   TID PERIOD STATE COUNT MAX_NS SYM,SYM,...
# from the sample's tid and period, its RAW payload (u32 version, u32 state, u64 blocks, u64
# longest block: perf-offwake-record(1), SAMPLES IN PERF.DATA) and its callchain's symbols,
# leaf first ("?" for an unnamed frame). Read by raw_blocks.h, for the tests.
import struct


def process_event(param_dict):
    if param_dict.get("ev_name") != "offwake-time":
        return
    raw = param_dict.get("raw_buf")
    if not raw or len(raw) < 24:
        print("short-raw", len(raw) if raw else 0)
        return
    _, state, count, max_ns = struct.unpack_from("<IIQQ", raw)
    sample = param_dict["sample"]
    syms = [f.get("sym", {}).get("name") or "?" for f in param_dict.get("callchain", [])]
    print(sample["tid"], sample["period"], state, count, max_ns, ",".join(syms) or "-")
