# perf script -s: one line per offwake-time sample, "TID PERIOD COUNT", COUNT being the number
# of blocks the sample sums (the u64 at byte 8 of its raw payload, perf-offwake-record(1)).
# Run by Debian's perf, whose Python decodes the payload: support/perf_script.cpp's
# add_block_counts() gives each parsed sample its count with it.
import struct


def process_event(param_dict):
    if param_dict.get("ev_name") != "offwake-time":
        return
    raw = param_dict.get("raw_buf")
    count = struct.unpack_from("<Q", raw, 8)[0] if raw and len(raw) >= 16 else 0
    s = param_dict["sample"]
    print(s["tid"], s["period"], count)
