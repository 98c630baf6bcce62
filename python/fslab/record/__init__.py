"""`fslab record`: a program's file-level I/O under one directory, recorded as fio iologs
(version 3), one per thread, which fslab-engine and fio replay on any file system.

The program runs under eBPF probes (`ebpf.py`: a bpftrace program on the raw system-call
tracepoints) or, as a fallback, under strace (`strace.py`); each recorder turns what it
saw into `iolog.Io`s, and `iolog.py` turns those on files under the directory into
traces. No data is recorded: a trace holds paths relative to the directory, offsets and
sizes only.
"""
