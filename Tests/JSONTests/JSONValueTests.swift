import JSON
import Testing

/// The one JSON encoder (docs/architecture.md#errors-and-habits).
@Suite struct JSONValueTests {
    @Test(arguments: [
        (1764000000.5, "1764000000.500000"), (0, "0.000000"), (-1.25, "-1.250000"), (0.9999996, "1.000000"),
        (-0.0000004, "0.000000"), (12.345678, "12.345678"),
    ])
    func fixedDecimals(_ value: Double, _ text: String) {
        #expect(JSONValue.fixed(value, places: 6).encoded == text)
    }

    @Test func fixedOutsideItsRangeOrNotFiniteIsStillJSON() {
        #expect(JSONValue.fixed(.infinity, places: 6).encoded == "null")
        #expect(JSONValue.fixed(.nan, places: 3).encoded == "null")
        #expect(JSONValue.fixed(1e300, places: 6).encoded == String(1e300))
        #expect(JSONValue.fixed(2.5, places: 0).encoded == "3")
    }

    @Test func stringsAreEscapedAndObjectsKeepTheirOrder() {
        let v = JSONValue.object([("z", "a\"b\\c\n\u{1}"), ("a", .array([1, true, .null]))])
        #expect(v.encoded == #"{"z":"a\"b\\c\n\u0001","a":[1,true,null]}"#)
    }

    @Test func prettyIndentsAndReadsBack() throws {
        let v = JSONValue.array([.object([("k", "v"), ("e", .array([])), ("o", .object([]))])])
        #expect(v.pretty == "[\n  {\n    \"k\" : \"v\",\n    \"e\" : [],\n    \"o\" : {}\n  }\n]")
        let back = try JSONValue.parse(Array(v.pretty.utf8))
        #expect(back == .array([.object([("e", .array([])), ("k", "v"), ("o", .object([]))])]))
    }

    @Test func parsingRefusesWhatIsNotJSON() {
        #expect(throws: (any Error).self) { try JSONValue.parse(Array("{\"a\":".utf8)) }
        #expect(throws: (any Error).self) { try JSONValue.parse(Array("".utf8)) }
    }

    @Test func briefCutsLongStringsAndNamesContainers() {
        #expect(JSONValue.string(String(repeating: "x", count: 50)).brief == "\"" + String(repeating: "x", count: 40) + "…\"")
        #expect(JSONValue.array([1]).brief == "an array or object")
        #expect(JSONValue.int(7).brief == "7")
    }
}
