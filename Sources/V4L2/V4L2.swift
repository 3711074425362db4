// The V4L2 module; see Package.swift for its job.
