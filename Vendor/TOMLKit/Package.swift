// swift-tools-version:5.4
// TOMLKit 0.6.0 (https://github.com/LebJe/TOMLKit, MIT), vendored with one patch to its copy
// of toml++ 3.4.0: see ../README.md. Its test target and tool dependencies are left out.

import PackageDescription

let package = Package(
	name: "TOMLKit",
	products: [
		.library(name: "TOMLKit", targets: ["TOMLKit"]),
	],
	targets: [
		.target(
			name: "CTOML",
			cxxSettings: [
				.define("TOML_EXCEPTIONS", to: "1"),
				// toml++ 3.4.0 spells `operator"" _toml`, deprecated by newer clang; as upstream builds it
				.unsafeFlags(["-Wno-deprecated-literal-operator"]),
			]
		),
		.target(
			name: "TOMLKit",
			dependencies: ["CTOML"],
			// its own warnings (retroactive conformances): not ours to fix in a vendored copy
			swiftSettings: [.unsafeFlags(["-suppress-warnings"])]
		),
	],
	cLanguageStandard: .c99,
	cxxLanguageStandard: .cxx17
)
