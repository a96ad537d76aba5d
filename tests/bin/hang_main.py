"""Hangs in its main code, in a function the guard's hang finding must name."""

import time


def wait_for_a_peer_that_never_answers():
    while True:
        time.sleep(0.05)


print("collected 1 item", flush=True)
wait_for_a_peer_that_never_answers()
