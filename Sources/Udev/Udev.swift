// The Udev module; see Package.swift for its job.
