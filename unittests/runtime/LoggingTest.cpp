//===- LoggingTest.cpp - The vmjit logger and its level -------------------===//

#include "vmjit/runtime/logging.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace vmjit;

namespace {

// Runs first in this file: nothing has changed the level yet.
TEST(LoggingTest, SilentByDefault) {
  if (std::getenv("VMJIT_LOG_LEVEL"))
    GTEST_SKIP() << "VMJIT_LOG_LEVEL is set";
  EXPECT_EQ(logger().level(), spdlog::level::off);
  EXPECT_EQ(logger().name(), "vmjit");
}

TEST(LoggingTest, SetLevelByName) {
  spdlog::level::level_enum Saved = logger().level();
  EXPECT_TRUE(setLogLevel("debug"));
  EXPECT_EQ(logger().level(), spdlog::level::debug);
  EXPECT_TRUE(logger().should_log(spdlog::level::info));
  EXPECT_FALSE(logger().should_log(spdlog::level::trace));
  EXPECT_TRUE(setLogLevel("warning"));
  EXPECT_EQ(logger().level(), spdlog::level::warn);
  EXPECT_TRUE(setLogLevel("off"));
  EXPECT_EQ(logger().level(), spdlog::level::off);
  logger().set_level(Saved);
}

TEST(LoggingTest, UnknownLevelChangesNothing) {
  spdlog::level::level_enum Saved = logger().level();
  ASSERT_TRUE(setLogLevel("error"));
  EXPECT_FALSE(setLogLevel("bogus"));
  EXPECT_FALSE(setLogLevel("DEBUG"));
  EXPECT_FALSE(setLogLevel(""));
  EXPECT_EQ(logger().level(), spdlog::level::err);
  logger().set_level(Saved);
}

} // namespace
