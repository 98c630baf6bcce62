#!/usr/bin/env python3
"""Writes diskspd-result.xml: DiskSpd 2.2's `-Rxml` output for
`diskspd -b8K -d30 -W5 -o8 -t4 -r -w30 -Sh -L -D -c1G D:\\testfile.dat`, element by element
as microsoft/diskspd's XmlResultParser.cpp and Common.cpp write them (no Windows machine
was at hand: the numbers are made up, the layout is DiskSpd's). Run it to write it again."""

import math
from pathlib import Path

THREADS, SECONDS, BS = 4, 30.0, 8192
READS = [1_000_123, 998_770, 1_001_455, 999_002]
WRITES = [428_611, 427_990, 429_301, 428_145]


def pct_ms(p: float, median: float, sigma: float) -> float:
    """A log-normal latency's percentile (ms)."""
    if p <= 0:
        return median * 0.05
    if p >= 100:
        return median * 40
    z = math.sqrt(2) * _erfinv(2 * p / 100 - 1)
    return median * math.exp(sigma * z)


def _erfinv(y: float) -> float:
    # Winitzki's approximation, refined twice by Newton's method.
    a = 0.147
    ln = math.log(1 - y * y)
    x = math.copysign(
        math.sqrt(
            math.sqrt((2 / (math.pi * a) + ln / 2) ** 2 - ln / a) - (2 / (math.pi * a) + ln / 2)
        ),
        y,
    )
    for _ in range(2):
        x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def main() -> None:
    out: list[str] = ["<Results>"]
    out += [
        "  <System>",
        "    <ComputerName>SQL-LAB-07</ComputerName>",
        "    <Tool>",
        "      <Version>2.2</Version>",
        "      <VersionDate>2024/6/3</VersionDate>",
        "    </Tool>",
        "    <RunTime>2026/11/20 09:15:02 UTC</RunTime>",
        '    <PowerScheme Name="High performance" Guid="8c5e7fda-e8bf-4a96-9a85-a6e23a8c635c"/>',
        '    <ProcessorTopology Heterogeneous="false">',
        '      <Group Group="0" MaximumProcessors="4" ActiveProcessors="4" '
        'ActiveProcessorMask="0xf"/>',
        '      <Node Node="0">',
        '        <Group Group="0" Mask="0xf"/>',
        "      </Node>",
        '      <Socket Socket="0">',
        '        <Group Group="0" Mask="0xf"/>',
        "      </Socket>",
        "    </ProcessorTopology>",
        "  </System>",
    ]
    out += [
        "  <Profile>",
        "    <Progress>0</Progress>",
        "    <ResultFormat>xml</ResultFormat>",
        "    <Verbose>false</Verbose>",
        "    <TimeSpans>",
        "      <TimeSpan>",
        "        <CompletionRoutines>false</CompletionRoutines>",
        "        <MeasureLatency>true</MeasureLatency>",
        "        <CalculateIopsStdDev>true</CalculateIopsStdDev>",
        "        <DisableAffinity>false</DisableAffinity>",
        f"        <Duration>{int(SECONDS)}</Duration>",
        "        <Warmup>5</Warmup>",
        "        <Cooldown>0</Cooldown>",
        "        <ThreadCount>0</ThreadCount>",
        "        <RequestCount>0</RequestCount>",
        "        <IoBucketDuration>1000</IoBucketDuration>",
        "        <RandSeed>0</RandSeed>",
        "        <Targets>",
        "          <Target>",
        "            <Path>D:\\testfile.dat</Path>",
        f"            <BlockSize>{BS}</BlockSize>",
        "            <BaseFileOffset>0</BaseFileOffset>",
        "            <SequentialScan>false</SequentialScan>",
        "            <RandomAccess>false</RandomAccess>",
        "            <TemporaryFile>false</TemporaryFile>",
        "            <UseLargePages>false</UseLargePages>",
        "            <DisableOSCache>true</DisableOSCache>",
        "            <WriteThrough>true</WriteThrough>",
        "            <WriteBufferContent>",
        "              <Pattern>sequential</Pattern>",
        "            </WriteBufferContent>",
        "            <ParallelAsyncIO>false</ParallelAsyncIO>",
        "            <FileSize>1073741824</FileSize>",
        f"            <Random>{BS}</Random>",
        "            <ThreadStride>0</ThreadStride>",
        "            <MaxFileSize>0</MaxFileSize>",
        "            <RequestCount>8</RequestCount>",
        "            <WriteRatio>30</WriteRatio>",
        "            <Throughput>0</Throughput>",
        f"            <ThreadsPerFile>{THREADS}</ThreadsPerFile>",
        "            <IOPriority>3</IOPriority>",
        "            <Weight>1</Weight>",
        "          </Target>",
        "        </Targets>",
        "      </TimeSpan>",
        "    </TimeSpans>",
        "  </Profile>",
    ]
    out += [
        "  <TimeSpan>",
        f"    <TestTimeSeconds>{SECONDS:.2f}</TestTimeSeconds>",
        f"    <ThreadCount>{THREADS}</ThreadCount>",
        "    <RequestCount>0</RequestCount>",
        "    <ProcCount>4</ProcCount>",
        "    <CpuUtilization>",
    ]
    for cpu in range(4):
        out += [
            "      <CPU>",
            "        <Socket>0</Socket>",
            "        <Node>0</Node>",
            "        <Group>0</Group>",
            f"        <Core>{cpu}</Core>",
            "        <EfficiencyClass>0</EfficiencyClass>",
            f"        <Id>{cpu}</Id>",
            "        <UsagePercent>31.25</UsagePercent>",
            "        <UserPercent>4.10</UserPercent>",
            "        <KernelPercent>27.15</KernelPercent>",
            "        <IdlePercent>68.75</IdlePercent>",
            "      </CPU>",
        ]
    out += [
        "      <Average>",
        "        <UsagePercent>31.25</UsagePercent>",
        "        <UserPercent>4.10</UserPercent>",
        "        <KernelPercent>27.15</KernelPercent>",
        "        <IdlePercent>68.75</IdlePercent>",
        "      </Average>",
        "    </CpuUtilization>",
    ]
    buckets = [
        "0",
        *(str(p) for p in range(1, 100)),
        "99.9",
        "99.99",
        "99.999",
        "99.9999",
        "99.99999",
        "99.999999",
        "99.9999999",
        "100",
    ]
    out += [
        '    <Latency ReadHistoBuckets="1401" WriteHistoBuckets="1712" TotalHistoBuckets="1890">',
        "      <AverageReadMilliseconds>0.207</AverageReadMilliseconds>",
        "      <ReadLatencyStdev>0.118</ReadLatencyStdev>",
        "      <AverageWriteMilliseconds>0.441</AverageWriteMilliseconds>",
        "      <WriteLatencyStdev>0.262</WriteLatencyStdev>",
        "      <AverageTotalMilliseconds>0.277</AverageTotalMilliseconds>",
        "      <LatencyStdev>0.196</LatencyStdev>",
    ]
    for b in buckets:
        p = float(b)
        r, w = pct_ms(p, 0.180, 0.45), pct_ms(p, 0.380, 0.50)
        t = pct_ms(p, 0.230, 0.55)
        out += [
            "      <Bucket>",
            f"        <Percentile>{b}</Percentile>",
            f"        <ReadMilliseconds>{r:.3f}</ReadMilliseconds>",
            f"        <WriteMilliseconds>{w:.3f}</WriteMilliseconds>",
            f"        <TotalMilliseconds>{t:.3f}</TotalMilliseconds>",
            "      </Bucket>",
        ]
    out += [
        "    </Latency>",
        "    <Iops>",
        "      <ReadIopsStdDev>812.402</ReadIopsStdDev>",
        "      <WriteIopsStdDev>355.119</WriteIopsStdDev>",
        "      <IopsStdDev>1040.557</IopsStdDev>",
    ]
    for s in range(1, int(SECONDS) + 1):
        r, w = 133_300 + (s % 5) * 150, 57_120 + (s % 3) * 80
        out.append(
            f'      <Bucket SampleMillisecond="{s * 1000}" Read="{r}" Write="{w}" '
            f'Total="{r + w}" ReadMinLatencyMilliseconds="0.009" '
            'ReadMaxLatencyMilliseconds="7.201" ReadAvgLatencyMilliseconds="0.207" '
            'ReadLatencyStdDev="0.118" WriteMinLatencyMilliseconds="0.019" '
            'WriteMaxLatencyMilliseconds="15.202" WriteAvgLatencyMilliseconds="0.441" '
            'WriteLatencyStdDev="0.262"/>'
        )
    out.append("    </Iops>")
    for t in range(THREADS):
        rd, wr = READS[t], WRITES[t]
        out += [
            "    <Thread>",
            f"      <Id>{t}</Id>",
            "      <Target>",
            "        <Path>D:\\testfile.dat</Path>",
            f"        <BytesCount>{(rd + wr) * BS}</BytesCount>",
            "        <FileSize>1073741824</FileSize>",
            f"        <IOCount>{rd + wr}</IOCount>",
            f"        <ReadBytes>{rd * BS}</ReadBytes>",
            f"        <ReadCount>{rd}</ReadCount>",
            f"        <WriteBytes>{wr * BS}</WriteBytes>",
            f"        <WriteCount>{wr}</WriteCount>",
            "        <Latency>",
            "          <AverageReadLatencyMilliseconds>0.207</AverageReadLatencyMilliseconds>",
            "          <ReadLatencyStdev>0.118</ReadLatencyStdev>",
            "          <AverageWriteLatencyMilliseconds>0.441</AverageWriteLatencyMilliseconds>",
            "          <WriteLatencyStdev>0.262</WriteLatencyStdev>",
            "          <AverageLatencyMilliseconds>0.277</AverageLatencyMilliseconds>",
            "          <LatencyStdev>0.196</LatencyStdev>",
            "        </Latency>",
            "        <Iops>",
            "          <ReadIopsStdDev>203.100</ReadIopsStdDev>",
            "          <WriteIopsStdDev>88.780</WriteIopsStdDev>",
            "          <IopsStdDev>260.139</IopsStdDev>",
            "        </Iops>",
            "      </Target>",
            "    </Thread>",
        ]
    out += ["  </TimeSpan>", "</Results>"]
    Path(__file__).with_name("diskspd-result.xml").write_text("\n".join(out))


if __name__ == "__main__":
    main()
