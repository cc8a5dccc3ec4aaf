"""Java: detection (a pom.xml at the root; a Gradle build is rejected with its own reason),
the reactor's POMs (``pom``), Debian's OpenJDK and Maven per suite (``toolchain``), the JDK
and layers of a recipe (``recipe``), Surefire's XML reports read into per-test statuses
(``runners.surefire``), validated with three runs (a compiled language)."""

from streams.evaluation.recipes.languages.java.language import Java

LANGUAGE = Java()
