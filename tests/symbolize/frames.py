# Prints every sample's callchain as perf's Python host gives it, one frame a line:
#   S comm pid tid event
#   ip|sym name|sym start|sym end|dso      ("-" where the frame has no such key)
# Used by symbolize_perf_test to compare the Symbolizer with `perf script -s`.
def process_event(param_dict):
    s = param_dict["sample"]
    print("S %s %d %d %s" % (param_dict["comm"], s["pid"], s["tid"], param_dict["ev_name"]))
    for f in param_dict.get("callchain", []):
        sym = f.get("sym")
        if sym is None:
            name, start, end = "-", "-", "-"
        else:
            name, start, end = sym["name"], "%x" % sym["start"], "%x" % sym["end"]
        print("%x|%s|%s|%s|%s" % (f["ip"], name, start, end, f.get("dso", "-")))
