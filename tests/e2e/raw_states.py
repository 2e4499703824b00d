# perf script -s: prints the task state (second u32 of the RAW payload) of each offwake-time
# sample, one per line. Used by edges_test.cpp.
import struct


def process_event(param_dict):
    if param_dict.get("ev_name") != "offwake-time":
        return
    raw = param_dict.get("raw_buf")
    if raw and len(raw) >= 8:
        print(struct.unpack_from("<II", raw)[1])
