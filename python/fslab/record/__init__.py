"""`fslab record`: a program's file-level I/O under one directory, recorded as fio iologs
(version 3), one per thread, which fslab-engine and fio replay on any file system.

The program runs under strace (`strace.py` reads its output), which prints each system
call with the path of the descriptor it names; `iolog.py` turns the calls on files under
the directory into traces. No data is recorded: strace prints no buffer (`-s 0`), and a
trace holds paths relative to the directory, offsets and sizes only.
"""
