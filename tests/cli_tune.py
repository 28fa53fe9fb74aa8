#!/usr/bin/python3
"""`vkformer tune` and the tuning database end to end, on tiny shapes:
- the search writes a database keyed by the device, and stores only
  configurations that beat the engine's rules by more than noise;
- the engine uses an entry: `kernel` and `bench ops --tuning compare` dispatch
  the tuned knobs, and the output still matches the CPU reference;
- a bad entry is left out with one warning naming the file and the entry, and the
  engine's own choice runs; a damaged, too deep or too large file is ignored with one
  warning;
- an entry the search did not write is checked against the reference at its first
  use, and the outcome recorded in the database: one that passes is used, one
  that misses (fault injection) is dropped with one warning and listed unusable;
- a candidate that loses the device (fault injection) is recorded as unusable
  and the search goes on; two searches at once leave a valid file.
No timing is asserted."""
import json
import os
import subprocess
import sys
import tempfile

vkf = sys.argv[1]


def run(args, env=None, code=0):
    r = subprocess.run([vkf] + args, capture_output=True, text=True, env={**os.environ, **(env or {})})
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)  # ctest fails on a validation message in it
    assert r.returncode == code, f"{args}: exit {r.returncode}, expected {code}\n{r.stderr}"
    return r


def device_entry(db):
    doc = json.load(open(db))
    assert doc["format"] == "vkformer-tuning 1", doc.get("format")
    (key, dev), = doc["devices"].items()
    assert key.startswith("vendor=0x") and "uuid=" in key and dev["device"], key
    return dev


def spec_of(out, op):
    line = next(l for l in out.splitlines() if l.startswith(op))
    return dict(kv.split("=") for kv in line.split() if "=" in kv)


with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "tuning.json")
    # 1. A search over two ops; progress on stderr; a valid database.
    r = run(["tune", "--op", "layernorm", "--shape", "m=16,n=64", "--op", "flash_attention", "--shape",
             "batch=1,heads=2,head_dim=16,q_len=8,kv_len=16", "--budget-s", "12", "--repeat", "2", "--tuning", db])
    assert "tune [1/" in r.stderr and "tune [2/" in r.stderr, r.stderr
    dev = device_entry(db)
    classes = [cls for shapes in dev["ops"].values() for cls in shapes]
    assert "m=16,n=64,dtype=f32" in classes, f"every searched shape gets an entry: {classes}"
    for op, shapes in dev["ops"].items():
        for cls, e in shapes.items():
            if e["variant"] or e["knobs"]:  # an empty entry records that the engine's choice won
                assert e["ms"] < 0.97 * e["default_ms"], f"{op} {cls}: stored without beating the default: {e}"
                # The search checked it against the reference: the engine need not check it again.
                assert 0 <= e["checked"]["error"] <= e["checked"]["bound"], f"{op} {cls}: {e}"
    tuned = sum(1 for s in dev["ops"].values() for e in s.values() if e["variant"] or e["knobs"])
    print(f"search stored {tuned} entries")

    # 2. The engine uses an entry, and the tuned kernel still matches the reference.
    cache = os.path.join(tmp, "cache")
    os.makedirs(cache)
    auto_db = os.path.join(cache, "tuning.json")
    key = json.load(open(db))["devices"]
    entry = {"variant": "blocked", "knobs": {"BM": 32, "BN": 32, "BK": 4, "TM": 8, "TN": 4}, "ms": 1, "default_ms": 2}
    (k, d), = key.items()
    json.dump({"format": "vkformer-tuning 1",
               "devices": {k: {"device": d["device"], "ops": {"gemm": {"m=64,n=48,k=64,dtype=f32": entry}}}}},
              open(auto_db, "w"))
    env = {"VKFORMER_CACHE_DIR": cache}
    out = run(["kernel", "gemm", "--m", "64", "--n", "48", "--k", "64"], env).stdout
    spec = spec_of(out, "gemm")
    assert (spec["BM"], spec["BN"], spec["TM"], spec["TN"], spec["STAGED"]) == ("32", "32", "8", "4", "0"), spec
    off = spec_of(run(["kernel", "gemm", "--m", "64", "--n", "48", "--k", "64", "--tuning", "off"], env).stdout, "gemm")
    assert off != spec, "--tuning off still used the database"
    # That hand-written entry was checked at its first use (issue 29 #12), and the outcome recorded.
    checked = device_entry(auto_db)["ops"]["gemm"]["m=64,n=48,k=64,dtype=f32"]["checked"]
    assert 0 <= checked["error"] <= checked["bound"], checked
    out = run(["devices"], env).stdout
    assert "tuning: 1 tuned op shapes" in out, out
    js = os.path.join(tmp, "cmp.json")
    run(["bench", "ops", "--op", "gemm", "--shape", "64x48x64", "--shape", "32x16x16", "--tuning", "compare",
         "--repeat", "2", "--json", js], env)
    rows = json.load(open(js))["results"]
    assert [x["tuning"] for x in rows] == ["default", "tuned", "default", "no entry"], [x["tuning"] for x in rows]
    assert rows[1]["spec"]["BM"] == 32 and rows[1]["speedup_vs_default"] > 0 and rows[0]["spec"] != rows[1]["spec"]
    assert all(x["passed"] for x in rows), rows
    # compare reads the database VKFORMER_TUNING names, as every other command does.
    named = os.path.join(tmp, "named.json")
    os.replace(auto_db, named)
    out = run(["bench", "ops", "--op", "gemm", "--shape", "64x48x64", "--tuning", "compare", "--repeat", "2"],
              {**env, "VKFORMER_TUNING": named}).stdout
    assert f"tuning database: {named} (1 entries" in out and "(tuned)" in out, out
    os.replace(named, auto_db)

    # 3. A bad entry never stops inference nor changes a result (issue 29 #10-#12): it is left
    # out with one warning naming the file and the entry, and the engine's own choice runs
    # (the same spec as --tuning off; `kernel` exits 1 when the output misses the reference).
    def bad_entry(cls, bad, m, n, k, needle):
        json.dump({"format": "vkformer-tuning 1", "devices": {k_: {"ops": {"gemm": {cls: bad}}}}}, open(auto_db, "w"))
        args = ["kernel", "gemm", "--m", str(m), "--n", str(n), "--k", str(k)]
        r = run(args, env)
        warnings = [l for l in r.stderr.splitlines() if "warning" in l]
        assert len(warnings) == 1 and auto_db in warnings[0] and f'gemm "{cls}"' in warnings[0] and \
            needle in warnings[0], f"{bad}: {r.stderr}"
        assert spec_of(r.stdout, "gemm") == spec_of(run(args + ["--tuning", "off"], env).stdout, "gemm"), r.stdout
        print(f"bad entry {bad}: {warnings[0]}")

    k_ = k
    cls = "m=64,n=48,k=64,dtype=f32"
    bad_entry(cls, dict(entry, knobs=dict(entry["knobs"], BM=30)), 64, 48, 64, "do not fit")  # not a multiple of TM
    bad_entry(cls, dict(entry, knobs=dict(entry["knobs"], BM=2**32 + 32)), 64, 48, 64,  # wrapped to 32, ran
              "knob BM=4294967328 is not an integer from 0 to 4294967295")
    bad_entry(cls, dict(entry, knobs=dict(entry["knobs"], TM=-8)), 64, 48, 64, "knob TM=-8 is not an integer")
    bad_entry(cls, dict(entry, variant="bogus"), 64, 48, 64, 'unknown variant "bogus"')
    # A register block of 1024 accumulators: lavapipe compiled it for over 60 s (> 5 GB).
    bad_entry(cls, dict(entry, knobs={"BM": 1024, "BN": 1, "BK": 4, "TM": 1024, "TN": 1}), 64, 48, 64,
              "TM x TN up to 256")
    # gemv COLS=2^30 at 4 rows: the 32-bit fit products wrapped to 0, and the result was wrong (max err 1.0).
    bad_entry("m=4,n=48,k=64,dtype=f32", {"variant": "", "knobs": {"COLS": 1073741824}}, 4, 48, 64, "does not fit")
    # An entry that fits but misses the reference at its first use (the check's outcome injected):
    # one warning, the engine's own choice, and the entry recorded as unusable, so the next run
    # neither checks nor uses it.
    gemm_args = ["kernel", "gemm", "--m", "64", "--n", "48", "--k", "64"]
    json.dump({"format": "vkformer-tuning 1", "devices": {k: {"ops": {"gemm": {cls: entry}}}}}, open(auto_db, "w"))
    r = run(gemm_args, {**env, "VKFORMER_FAULT_INJECT": "tuning_check:wrong_output"})
    warnings = [l for l in r.stderr.splitlines() if "warning" in l]
    assert len(warnings) == 1 and f'gemm "{cls}"' in warnings[0] and "missed the reference at its first use" in \
        warnings[0], r.stderr
    default_spec = spec_of(run(gemm_args + ["--tuning", "off"], env).stdout, "gemm")
    assert spec_of(r.stdout, "gemm") == default_spec, r.stdout
    assert device_entry(auto_db)["unusable"]["gemm"][cls] == ["blocked BK=4 BM=32 BN=32 TM=8 TN=4"], \
        device_entry(auto_db)
    r = run(gemm_args, env)
    assert "warning" not in r.stderr and spec_of(r.stdout, "gemm") == default_spec, r.stderr
    # A file over 16 MiB (sparse: nothing is stored) is refused before a byte is read.
    with open(auto_db, "w") as f:
        f.truncate(17 << 20)
    r = run(["kernel", "gemm", "--m", "64", "--n", "48", "--k", "64"], env)
    assert r.stderr.count("ignoring the tuning database") == 1 and "more than the 16777216 allowed" in r.stderr, \
        r.stderr
    # Nested past 64 levels: the same one warning.
    open(auto_db, "w").write('{"format": "vkformer-tuning 1", "devices": ' + "[" * 100000 + "]" * 100000 + "}")
    r = run(["kernel", "gemm", "--m", "64", "--n", "48", "--k", "64"], env)
    assert r.stderr.count("ignoring the tuning database") == 1 and "nested deeper than 64" in r.stderr, r.stderr

    # 4. A damaged file: one warning, then the engine's rules.
    open(auto_db, "w").write('{"format": "vkformer-tuning 1", "devices": {')
    r = run(["kernel", "gemm", "--m", "64", "--n", "48", "--k", "64"], env)
    assert r.stderr.count("ignoring the tuning database") == 1, r.stderr
    assert "ignored (damaged)" in run(["devices"], env).stdout
    for bad in (["--repeat", "0"], ["--budget-s", "0"], ["--op", "add"]):  # usage errors: exit 2, nothing written
        r = run(["tune", "--op", "layernorm"] + bad + ["--tuning", os.path.join(tmp, "none.json")], code=2)
        assert r.stderr.count("\n") <= 2 and not os.path.exists(os.path.join(tmp, "none.json")), r.stderr
    r = run(["devices", "--tuning", "compare"], code=1)
    assert "only for `vkformer bench ops`" in r.stderr, r.stderr

    # 5. A candidate that loses the device is unusable; the search goes on.
    # Waits: 2 for the default (a check run, 1 timed), 2 per candidate; the 6th is the second candidate's.
    lost_db = os.path.join(tmp, "lost.json")
    r = run(["tune", "--op", "layernorm", "--shape", "m=8,n=64", "--budget-s", "12", "--repeat", "1",
             "--tuning", lost_db], {"VKFORMER_FAULT_INJECT": "wait:device_lost:6"})
    assert "unusable" in r.stderr and "DEVICE_LOST" in r.stderr, r.stderr
    bad = device_entry(lost_db)["unusable"]["layernorm"]["m=8,n=64,dtype=f32"]
    assert len(bad) == 1, bad
    after = r.stderr[r.stderr.index("DEVICE_LOST"):]
    assert "best" in after or "kept the default" in after, "the search stopped at the lost device"
    best = device_entry(lost_db).get("ops", {}).get("layernorm", {}).get("m=8,n=64,dtype=f32")
    assert not best or best["variant"] + "".join(f" {n}={v}" for n, v in best["knobs"].items()) != bad[0]

    # Storing replaces the file by renaming: a symlink or a device there is refused before the search.
    link = os.path.join(tmp, "link.json")
    os.symlink(db, link)
    r = run(["tune", "--op", "rmsnorm", "--shape", "m=4,n=32", "--tuning", link], code=1)
    assert "must be a regular file" in r.stderr and "tune [" not in r.stderr, r.stderr

    # 6. Two searches at once: the file stays valid JSON with at least one's results.
    both = os.path.join(tmp, "both.json")
    procs = [subprocess.Popen([vkf, "tune", "--op", "rmsnorm", "--shape", s, "--budget-s", "5", "--repeat", "1",
                               "--tuning", both], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for s in ["m=4,n=32", "m=8,n=32"]]
    for p in procs:
        out, err = p.communicate()
        sys.stderr.write(err)
        assert p.returncode == 0, err
    device_entry(both)
print("cli_tune: ok")
