# The handler of param_dict_fuzz (tests/script/param_dict_fuzz.cpp): what every param_dict
# promises a script (sample_dict.h), checked on each dict, and every value read once. A
# broken promise raises, and the fuzz target stops on it.


def check_frames(chain):
    assert isinstance(chain, list)
    for frame in chain:
        assert isinstance(frame["ip"], int)
        if "sym" in frame:
            sym = frame["sym"]
            assert isinstance(sym["name"], str), sym
            assert isinstance(sym["start"], int) and isinstance(sym["end"], int), sym
            assert isinstance(frame["sym_off"], int)
        if "dso" in frame:
            assert isinstance(frame["dso"], str)


def check_thread(thread):
    assert isinstance(thread["pid"], int) and isinstance(thread["tid"], int)
    assert isinstance(thread["comm"], str)
    check_frames(thread["callchain"])


def process_event(param_dict):
    assert isinstance(param_dict["ev_name"], str)
    assert isinstance(param_dict["attr"], bytes)
    assert isinstance(param_dict["raw_buf"], bytes)
    assert isinstance(param_dict["comm"], str)
    sample = param_dict["sample"]
    for key in ("pid", "tid", "cpu", "ip", "time", "period", "phys_addr", "addr", "cpumode"):
        assert isinstance(sample[key], int), key
    check_frames(param_dict["callchain"])
    if "waker" in param_dict:
        check_thread(param_dict["waker"])
        assert isinstance(param_dict["waker"]["context"], str)
    if "chain" in param_dict:
        hops = param_dict["chain"]
        assert [h["hop"] for h in hops] == list(range(1, len(hops) + 1)), hops
        for h in hops:
            if "tid" in h:
                check_thread(h)
            if "blocked" in h:
                check_thread(h["blocked"])
        if hops:
            assert all(h["end"] is None for h in hops[:-1]) and hops[-1]["end"] == param_dict["chain_end"]
    repr(param_dict)
