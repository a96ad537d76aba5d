"""Wait at a password prompt on the terminal, as a login step (``huggingface-cli login``, a W&B key)
does when a test runs it without the token in its environment: ``getpass`` turns the terminal's echo
off until the answer comes, and no answer comes. Prints the prompt, then blocks reading stdin."""

import getpass

getpass.getpass("Enter your token (input will not be visible): ")
