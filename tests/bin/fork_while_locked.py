"""A parent that forks while one of its threads holds a lock, then waits for the child in ``os.waitpid``.

The child gets the lock copied locked, with no thread to release it, and blocks on it forever: the
classic fork-with-threads deadlock (a DataLoader forked from a process whose logging thread held its
lock). ``os.waitpid`` is a C call, so py-spy shows the parent in its own ``<module>`` frame; only the
kernel's wait channel says the parent merely waits. Prints ``child pid=N``.
"""

import os
import threading

lock = threading.Lock()
held = threading.Event()


def hold_the_lock():
    lock.acquire()
    held.set()
    threading.Event().wait()


def take_the_copied_lock():
    with lock:
        pass


if __name__ == "__main__":
    threading.Thread(target=hold_the_lock, daemon=True).start()
    held.wait()
    child = os.fork()
    if child == 0:
        take_the_copied_lock()
        os._exit(0)
    print(f"child pid={child}", flush=True)
    os.waitpid(child, 0)
