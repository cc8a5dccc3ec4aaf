"""Java's toolchain images: Debian's OpenJDK and Maven on each suite's base image.

Each suite packages its own JDKs and Maven (checked with ``apt-cache policy`` on the base
images): bullseye OpenJDK 11 with Maven 3.6.3, bookworm 17 with 3.8.7, trixie 21 with 3.9.9,
forky 25 with 3.9.12.
Debian has no JDK 8 any more: a build that targets 8 (``source``/``target``/``release`` 1.8)
is compiled by the oldest JDK there is, 11, which still accepts 7 and 8. Each image names its
JDK in Maven's global ``toolchains.xml``, so a build that asks the toolchains plugin for a JDK
of its version range finds this one. The local repository is the image's own directory
(``MAVEN_REPOSITORY``), whatever the user's home: the env layer fills it, the tests read it
offline.
"""

from __future__ import annotations

import base64

from streams.evaluation.recipes.languages import ToolchainImages, debian_install_steps

# Debian suite -> the OpenJDK major installed there (oldest suite first)
DEBIAN_JDK = {"bullseye": "11", "bookworm": "17", "trixie": "21", "forky": "25"}
DEBIAN_MAVEN = {"bullseye": "3.6.3", "bookworm": "3.8.7", "trixie": "3.9.9", "forky": "3.9.12"}
MAVEN_REPOSITORY = "/opt/swe-m2/repository"
TOOLCHAINS = "/usr/share/maven/conf/toolchains.xml"

# the JDK's home, from javac's resolved path, named as the one JDK of Maven's toolchains (its
# version: the image's major, which a build's range such as [17,22) is matched against)
_TOOLCHAINS_STEP = (
    'home="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")" && '
    "printf '<toolchains><toolchain><type>jdk</type><provides><version>%s</version>"
    "<vendor>openjdk</vendor></provides><configuration><jdkHome>%s</jdkHome>"
    f'</configuration></toolchain></toolchains>\\n\' "$TOOLCHAIN_VERSION" "$home" > {TOOLCHAINS}'
)

# The JVM trusts its own keystore, not the system's PEM bundle: a CA the base image was given
# (a TLS-intercepting network's, ``images base --ca-bundle``) is added to it, by one JVM (a
# keytool per certificate would take a minute)
EXTRA_CA = "/usr/local/share/ca-certificates/swe-stream-extra.crt"
JAVA_KEYSTORE = "/etc/ssl/certs/java/cacerts"
_TRUST_PROGRAM = """import java.io.*;
import java.security.KeyStore;
import java.security.cert.*;

public class Trust {
    public static void main(String[] args) throws Exception {
        char[] password = "changeit".toCharArray();
        File file = new File(args[1]);
        KeyStore store = KeyStore.getInstance(file, password);
        int n = 0;
        try (InputStream in = new FileInputStream(args[0])) {
            for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                store.setCertificateEntry("swe-stream-extra-" + n++, c);
            }
        }
        try (OutputStream out = new FileOutputStream(file)) {
            store.store(out, password);
        }
        System.out.println("trusted " + n + " certificates of " + args[0]);
    }
}
"""
_TRUST_STEP = (
    f"if [ -f {EXTRA_CA} ]; then "
    f"echo {base64.b64encode(_TRUST_PROGRAM.encode()).decode()} | base64 -d > /tmp/Trust.java && "
    f"java /tmp/Trust.java {EXTRA_CA} {JAVA_KEYSTORE} && rm /tmp/Trust.java; fi"
)

JAVA_IMAGES = ToolchainImages(
    prefix="swe-stream/java",
    label="org.swe-stream.java",
    by_suite=DEBIAN_JDK,
    steps=debian_install_steps(
        "openjdk-${TOOLCHAIN_VERSION}-jdk-headless maven",
        _TOOLCHAINS_STEP,
        _TRUST_STEP,
        f"mkdir -p {MAVEN_REPOSITORY}",
        "java -version && mvn -version",
    ),
    environment=(
        # the image's repository, a Maven JVM of modest size on the quick compiler alone: a
        # build's JVM lives seconds, and C2 spent more CPU than it saved (a plugin resolution:
        # 3.8 s of CPU with it, 1.6 without); the tests' own forked JVMs are left as they are
        (
            "MAVEN_OPTS",
            f"-Dmaven.repo.local={MAVEN_REPOSITORY} -Xmx1g -XX:TieredStopAtLevel=1 "
            "-XX:+UseSerialGC",
        ),
        # UTF-8 file and console encodings on JDK 11 and 17 too (their default follows the
        # locale), without JAVA_TOOL_OPTIONS, whose notice every JVM would print
        ("LANG", "C.UTF-8"),
    ),
    note="Maven's repository is the image's (MAVEN_OPTS); the JDK is named in its toolchains",
)
