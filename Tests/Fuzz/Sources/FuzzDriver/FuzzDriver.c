// LLVMFuzzerRunDriver comes from libFuzzer (linked by -sanitize=fuzzer).
