// quote_text(): text from a file echoed in a message. What a terminal would act on (escape
// sequences, line breaks, bytes of no character) is shown as \xNN, the rest as it is.
#include <gtest/gtest.h>

#include "util/printable.h"

namespace offwake {
namespace {

TEST(Quoted, PrintableTextIsQuotedAsItIs) {
  EXPECT_EQ(quote_text("unwind_tables=3"), "'unwind_tables=3'");
  EXPECT_EQ(quote_text(""), "''");
  EXPECT_EQ(quote_text("a b'c"), "'a b'c'");
}

TEST(Quoted, EveryOtherByteIsShownAsHex) {
  EXPECT_EQ(quote_text("unwind_tU\xef\x1b[31m\n\x7f\\"), "'unwind_tU\\xef\\x1b[31m\\x0a\\x7f\\x5c'");
  EXPECT_EQ(quote_text(std::string("a\0b", 3)), "'a\\x00b'");
}

}  // namespace
}  // namespace offwake
