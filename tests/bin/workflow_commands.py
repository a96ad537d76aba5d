"""Prints lines that GitHub's runner would treat as workflow commands if it parsed them."""

print("::error file=x.py,line=1::fake annotation from the test")
print("::add-mask::hunter2")
print("::stop-commands::silence-the-guard")
print("   ::warning::indented command")
print("text ##[error]anywhere in a line")
print("ordinary output")
