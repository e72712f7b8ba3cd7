import platform
print(f"Hello from Python {platform.python_version()} in a sandbox")
