//===- TestMain.cpp - Catch2 main for the frontend tests ------------------===//
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
