"""Built-in backends. Each subpackage exposes ``kernels() -> list[harness.protocol.KernelSpec]``."""
