# Prints each sample as perf's own Python scripting decodes it, one line per sample, for tests
# that check our files against a reader that is not ours (tests/support/perf_decoded.h):
#   sample event=NAME pid=P tid=T cpu=C time=NS period=N ip=HEX cpumode=M frames=HEX,HEX raw=HEX
# frames are perf's resolved callchain, leaf first (no context markers); raw is PERF_SAMPLE_RAW.
# Run with: perf script -s perf_sample_fields.py -i FILE


def process_event(param_dict):
    s = param_dict["sample"]
    frames = ",".join("%x" % f["ip"] for f in param_dict.get("callchain") or [])
    raw = param_dict.get("raw_buf") or b""
    print("sample event=%s pid=%d tid=%d cpu=%d time=%d period=%d ip=%x cpumode=%d frames=%s raw=%s"
          % (param_dict["ev_name"], s["pid"], s["tid"], s["cpu"], s["time"], s["period"], s["ip"],
             s["cpumode"], frames, raw.hex()))
