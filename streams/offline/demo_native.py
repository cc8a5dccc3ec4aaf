"""The demo projects of C++ and C (``demo --language cpp`` / ``c``): the units project of the
other demos, with the same bug (``f - 32 * 5 / 9``) and the pull request that fixes it and adds
the test that shows it.

* C++: CMake, GoogleTest found installed (``find_package(GTest)``, Debian's) and its cases
  discovered by CTest (``gtest_discover_tests``);
* C: Meson, one test executable per ``test()``, the PR adding one to ``tests/meson.build``.
"""

from __future__ import annotations

CPP_LISTS = """\
cmake_minimum_required(VERSION 3.14)
project(units VERSION 0.1.0 LANGUAGES CXX)
add_library(units src/temperature.cpp)
target_include_directories(units PUBLIC include)
enable_testing()
find_package(GTest REQUIRED)
include(GoogleTest)
add_executable(temperature_test tests/temperature_test.cpp)
target_link_libraries(temperature_test units GTest::gtest_main)
gtest_discover_tests(temperature_test)
"""
CPP_HEADER = (
    "#pragma once\n\nnamespace units {\ndouble celsius_to_fahrenheit(double c);\n"
    "double fahrenheit_to_celsius(double f);\n}  // namespace units\n"
)
CPP_SOURCE = (
    '#include "units/temperature.h"\n\nnamespace units {\n'
    "double celsius_to_fahrenheit(double c) { return c * 9 / 5 + 32; }\n"
    "double fahrenheit_to_celsius(double f) { return f - 32 * 5 / 9.0; }\n}  // namespace units\n"
)
CPP_TEST = (
    '#include <gtest/gtest.h>\n\n#include "units/temperature.h"\n\n'
    "TEST(Temperature, FreezingPoint) {\n"
    "  EXPECT_DOUBLE_EQ(units::celsius_to_fahrenheit(0), 32);\n}\n"
    "TEST(Temperature, BoilingPoint) {\n"
    "  EXPECT_DOUBLE_EQ(units::celsius_to_fahrenheit(100), 212);\n}\n"
)
CPP_BASE = {
    "README.md": "# units\n\nConversions between units of measure.\n",
    "CMakeLists.txt": CPP_LISTS,
    "include/units/temperature.h": CPP_HEADER,
    "src/temperature.cpp": CPP_SOURCE,
    "tests/temperature_test.cpp": CPP_TEST,
}
CPP_FIX: dict[str, str | None] = {
    "src/temperature.cpp": CPP_SOURCE.replace("f - 32 * 5 / 9.0", "(f - 32) * 5 / 9.0"),
    "tests/temperature_test.cpp": CPP_TEST + "TEST(Temperature, FahrenheitBoilingPoint) {\n"
    "  EXPECT_DOUBLE_EQ(units::fahrenheit_to_celsius(212), 100);\n}\n",
}

C_MESON = """\
project('units', 'c', version: '0.1.0')
units = static_library('units', 'src/temperature.c',
                       include_directories: include_directories('include'))
subdir('tests')
"""
C_TESTS = """\
foreach name : {names}
  exe = executable('test_' + name, 'test_' + name + '.c', link_with: units,
                   include_directories: include_directories('../include'))
  test(name, exe)
endforeach
"""
C_HEADER = (
    "#pragma once\n\ndouble celsius_to_fahrenheit(double c);\n"
    "double fahrenheit_to_celsius(double f);\n"
)
C_SOURCE = (
    '#include "temperature.h"\n\n'
    "double celsius_to_fahrenheit(double c) { return c * 9 / 5 + 32; }\n"
    "double fahrenheit_to_celsius(double f) { return f - 32 * 5 / 9.0; }\n"
)
C_BASE = {
    "README.md": "# units\n\nConversions between units of measure.\n",
    "meson.build": C_MESON,
    "include/temperature.h": C_HEADER,
    "src/temperature.c": C_SOURCE,
    "tests/meson.build": C_TESTS.format(names="['celsius']"),
    "tests/test_celsius.c": (
        '#include "temperature.h"\n\n'
        "int main(void) { return celsius_to_fahrenheit(100) == 212 ? 0 : 1; }\n"
    ),
}
C_FIX: dict[str, str | None] = {
    "src/temperature.c": C_SOURCE.replace("f - 32 * 5 / 9.0", "(f - 32) * 5 / 9.0"),
    "tests/meson.build": C_TESTS.format(names="['celsius', 'fahrenheit']"),
    "tests/test_fahrenheit.c": (
        '#include "temperature.h"\n\n'
        "int main(void) { return fahrenheit_to_celsius(212) == 100 ? 0 : 1; }\n"
    ),
}
