"""The 18 worked examples of the OBI spec (opra-binary.md section 13) as wire bytes, written
out field by field with each field's name, so a test reads which bytes a value comes from.
Shared by the golden tests (tests/unit/test_codec_obi_golden.py), the property tests and the
atheris seeds (tests/fuzz/fuzz_obi_decode.py)."""
from __future__ import annotations


def H(s: str) -> bytes:
    """Hex with spaces to bytes."""
    return bytes.fromhex(s)


# Example 1: H C, Start of Day, line 1 (pad byte)
EX1 = H(
    "06 "  # version
    "00 22 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 00 00 "  # block sequence
    "01 "  # messages
    "69 9b f3 e8 "  # seconds
    "07 5b cd 15 "  # nanoseconds
    "05 b5 "  # checksum
    "4f 48 43 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "00"  # pad
)

# Example 2: a 'k', a 'q' and a 'q' with a best-offer appendage in one block
EX2 = H(
    "06 "  # version
    "00 84 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 00 01 "  # block sequence
    "03 "  # messages
    "69 9c 64 68 "  # seconds
    "00 00 01 f4 "  # nanoseconds
    "13 e6 "  # checksum
    "43 6b 20 41 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "41 41 50 4c 20 "  # symbol
    "00 "  # reserved
    "43 "  # month
    "14 "  # day
    "1a "  # year
    "43 "  # strike den
    "00 03 82 70 "  # strike
    "42 "  # premium den
    "00 00 04 e2 "  # bid
    "00 00 00 0a "  # bid size
    "00 00 04 fb "  # offer
    "00 00 00 19 "  # offer size
    "58 71 20 46 "  # message 1: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "41 41 50 4c "  # symbol
    "4f "  # month
    "14 "  # day
    "1a "  # year
    "08 fc "  # strike
    "01 9f "  # bid
    "00 0c "  # bid size
    "01 ae "  # offer
    "00 28 "  # offer size
    "49 71 20 43 "  # message 2: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "41 41 50 4c "  # symbol
    "43 "  # month
    "14 "  # day
    "1a "  # year
    "09 2e "  # strike
    "03 f2 "  # bid
    "00 05 "  # bid size
    "04 06 "  # offer
    "00 07 "  # offer size
    "5a 42 00 00 04 01 00 00 00 03 "  # best offer: participant, den, price, size
)

# Example 3: 'k' with indicator O: both appendages
EX3 = H(
    "06 "  # version
    "00 54 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 00 4d "  # block sequence
    "01 "  # messages
    "69 9c 64 69 "  # seconds
    "3b 9a c9 ff "  # nanoseconds
    "11 75 "  # checksum
    "57 6b 41 4f "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "53 50 58 57 20 "  # symbol
    "00 "  # reserved
    "52 "  # month
    "12 "  # day
    "1a "  # year
    "43 "  # strike den
    "00 53 ec 60 "  # strike
    "42 "  # premium den
    "00 00 03 ed "  # bid
    "00 00 00 64 "  # bid size
    "00 00 03 f7 "  # offer
    "00 00 00 fa "  # offer size
    "43 42 00 00 03 f2 00 00 00 28 "  # best bid: participant, den, price, size
    "43 42 00 00 03 f4 00 00 00 23 "  # best offer: participant, den, price, size
)

# Example 4: 'q' with indicator M: best-bid appendage, stream B
EX4 = H(
    "06 "  # version
    "00 3c "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 00 4e "  # block sequence
    "01 "  # messages
    "69 9c 64 6a "  # seconds
    "00 00 00 01 "  # nanoseconds
    "07 83 "  # checksum
    "51 71 20 4d "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "46 20 20 20 "  # symbol
    "41 "  # month
    "0f "  # day
    "1b "  # year
    "00 7d "  # strike
    "00 05 "  # bid
    "00 78 "  # bid size
    "00 0a "  # offer
    "00 50 "  # offer size
    "42 42 00 00 00 06 00 00 01 90 "  # best bid: participant, den, price, size
)

# Example 5: two 'a' last sales, types I and S
EX5 = H(
    "06 "  # version
    "00 6c "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 10 92 "  # block sequence
    "02 "  # messages
    "69 9c 64 6b "  # seconds
    "0e e6 b2 80 "  # nanoseconds
    "10 9c "  # checksum
    "43 61 49 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "42 52 4b 42 20 "  # symbol
    "00 "  # reserved
    "4c "  # month
    "12 "  # day
    "1a "  # year
    "41 "  # strike den
    "00 00 13 88 "  # strike
    "00 00 00 03 "  # volume
    "42 "  # premium den
    "00 00 0a 0f "  # premium
    "00 00 00 00 "  # trade id
    "00 00 00 00 "  # reserved
    "56 61 53 20 "  # message 1: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "54 53 4c 41 20 "  # symbol
    "00 "  # reserved
    "53 "  # month
    "02 "  # day
    "1b "  # year
    "43 "  # strike den
    "00 02 dc 6c "  # strike
    "00 02 49 f0 "  # volume
    "44 "  # premium den
    "00 01 e2 40 "  # premium
    "00 00 00 00 "  # trade id
    "00 00 00 00 "  # reserved
    "00"  # pad
)

# Example 6: 'd' open interest
EX6 = H(
    "06 "  # version
    "00 34 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 00 0a "  # block sequence
    "01 "  # messages
    "69 9c 3a 38 "  # seconds
    "00 00 00 00 "  # nanoseconds
    "06 bc "  # checksum
    "47 64 20 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "49 57 4d 20 20 "  # symbol
    "00 "  # reserved
    "55 "  # month
    "1e "  # day
    "1a "  # year
    "41 "  # strike den
    "00 00 08 34 "  # strike
    "00 12 d6 87 "  # open interest
    "00"  # pad
)

# Example 7: 'f' end-of-day summary: negative net change, 64-bit underlying
EX7 = H(
    "06 "  # version
    "00 5e "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 0f 3e 58 "  # block sequence
    "01 "  # messages
    "69 9c c8 04 "  # seconds
    "00 00 00 2a "  # nanoseconds
    "0f 50 "  # checksum
    "4e 66 20 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "58 59 5a 20 20 "  # symbol
    "00 "  # reserved
    "44 "  # month
    "11 "  # day
    "1a "  # year
    "42 "  # strike den
    "00 00 10 9a "  # strike
    "00 00 03 2c "  # volume
    "00 00 9d 12 "  # open interest
    "42 "  # premium den
    "00 00 01 36 "  # open
    "00 00 01 63 "  # high
    "00 00 01 22 "  # low
    "00 00 01 2a "  # last
    "ff ff ff e5 "  # net change
    "44 "  # underlying den
    "00 00 00 00 00 06 c2 f5 "  # underlying
    "00 00 01 27 "  # bid
    "00 00 01 2d "  # offer
    "00"  # pad
)

# Example 8: two 'Y', type space and type I
EX8 = H(
    "06 "  # version
    "00 4c "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 01 f4 "  # block sequence
    "02 "  # messages
    "69 9c 64 6c "  # seconds
    "00 00 00 07 "  # nanoseconds
    "0c 30 "  # checksum
    "43 59 20 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "53 50 58 20 20 "  # symbol
    "00 "  # reserved
    "42 "  # index den
    "00 08 f6 f8 "  # value / bid index
    "00 00 00 00 "  # reserved / offer index
    "43 59 49 20 "  # message 1: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "56 49 58 20 20 "  # symbol
    "00 "  # reserved
    "42 "  # index den
    "00 00 05 de "  # value / bid index
    "00 00 05 e7 "  # reserved / offer index
    "00"  # pad
)

# Example 9: 'C' FLEX text of odd length (no pad)
EX9 = H(
    "06 "  # version
    "00 4c "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 01 f6 "  # block sequence
    "01 "  # messages
    "69 9c 64 6d "  # seconds
    "00 00 00 00 "  # nanoseconds
    "0d 1a "  # checksum
    "43 43 20 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "00 29 "  # text length
    "46 4c 45 58 20 49 20 20 20 53 50 58 20 20 20 4c 53 54 20 32 20 20 20 20 20 32 35 30 20 40 20 32 33 2e 37 35 20 35 4e 53 58 "  # text
)

# Example 10: 'C' without text
EX10 = H(
    "06 "  # version
    "00 24 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 01 f7 "  # block sequence
    "01 "  # messages
    "69 9c 64 6e "  # seconds
    "00 00 00 00 "  # nanoseconds
    "04 3b "  # checksum
    "4f 43 20 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "00 00 "  # text length
    "00"  # pad
)

# Example 11: 'C' text of even length (pad)
EX11 = H(
    "06 "  # version
    "00 42 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 01 f8 "  # block sequence
    "01 "  # messages
    "69 9c 64 6f "  # seconds
    "00 00 00 00 "  # nanoseconds
    "0c 8a "  # checksum
    "58 43 20 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "00 1e "  # text length
    "54 52 41 44 49 4e 47 20 48 41 4c 54 45 44 20 49 4e 20 41 42 43 44 20 4f 50 54 49 4f 4e 53 "  # text
    "00"  # pad
)

# Example 12: 'q' with an unlisted type Z, then a rotation 'q'
EX12 = H(
    "06 "  # version
    "00 50 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 1b 59 "  # block sequence
    "02 "  # messages
    "69 9c 64 70 "  # seconds
    "00 00 00 00 "  # nanoseconds
    "0c c2 "  # checksum
    "4d 71 5a 41 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "47 45 20 20 "  # symbol
    "45 "  # month
    "0f "  # day
    "1a "  # year
    "05 dc "  # strike
    "00 d2 "  # bid
    "00 14 "  # bid size
    "00 e1 "  # offer
    "00 1e "  # offer size
    "4d 71 52 42 "  # message 1: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "47 45 20 20 "  # symbol
    "51 "  # month
    "0f "  # day
    "1a "  # year
    "05 dc "  # strike
    "00 5f "  # bid
    "00 0a "  # bid size
    "00 69 "  # offer
    "00 0a "  # offer size
    "00"  # pad
)

# Example 13: 'R' series mapping on line 220 (128 reserved bytes)
EX13 = H(
    "06 "  # version
    "00 b0 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 00 01 "  # block sequence
    "01 "  # messages
    "69 9c 02 c0 "  # seconds
    "00 00 00 00 "  # nanoseconds
    "06 e8 "  # checksum
    "4f 52 41 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "41 41 50 4c 20 "  # symbol
    "43 "  # month
    "14 "  # day
    "1a "  # year
    "43 "  # strike den
    "00 03 82 70 "  # strike
    "00 11 "  # mapped line
    + "00 " * 128  # reserved
)

# Example 14: H N Line Integrity
EX14 = H(
    "06 "  # version
    "00 22 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 00 03 "  # block sequence
    "01 "  # messages
    "69 9c 64 72 "  # seconds
    "00 00 00 00 "  # nanoseconds
    "03 7b "  # checksum
    "4f 48 4e 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "00"  # pad
)

# Example 15: H K Reset to 1
EX15 = H(
    "06 "  # version
    "00 22 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "00 "  # session
    "00 00 00 01 "  # block sequence
    "01 "  # messages
    "69 9c 64 73 "  # seconds
    "00 00 00 00 "  # nanoseconds
    "03 77 "  # checksum
    "4f 48 4b 20 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "00"  # pad
)

# Example 16: a retransmitted block ('V') of example 2's second message
EX16 = H(
    "06 "  # version
    "00 32 "  # block size
    "4f "  # feed
    "56 "  # retransmission
    "00 "  # session
    "00 00 00 02 "  # block sequence
    "01 "  # messages
    "69 9c 64 68 "  # seconds
    "00 00 01 f4 "  # nanoseconds
    "08 f7 "  # checksum
    "58 71 20 46 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "41 41 50 4c "  # symbol
    "4f "  # month
    "14 "  # day
    "1a "  # year
    "08 fc "  # strike
    "01 9f "  # bid
    "00 0c "  # bid size
    "01 ae "  # offer
    "00 28 "  # offer size
)

# Example 17: GTH 'k' with a best-offer appendage, session 1
EX17 = H(
    "06 "  # version
    "00 4a "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "01 "  # session
    "00 00 00 1f "  # block sequence
    "01 "  # messages
    "69 9b c8 28 "  # seconds
    "00 00 00 05 "  # nanoseconds
    "09 89 "  # checksum
    "43 6b 20 47 "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "53 50 58 20 20 "  # symbol
    "00 "  # reserved
    "43 "  # month
    "14 "  # day
    "1a "  # year
    "49 "  # strike den
    "00 00 17 70 "  # strike
    "42 "  # premium den
    "00 00 10 72 "  # bid
    "00 00 00 0b "  # bid size
    "00 00 10 c2 "  # offer
    "00 00 00 09 "  # offer size
    "57 42 00 00 10 b8 00 00 00 14 "  # best offer: participant, den, price, size
)

# Example 18: GTH zero quote generated by OPRA, session 'X'
EX18 = H(
    "06 "  # version
    "00 40 "  # block size
    "4f "  # feed
    "20 "  # retransmission
    "58 "  # session
    "00 00 00 5a "  # block sequence
    "01 "  # messages
    "69 9b cc 10 "  # seconds
    "00 00 00 00 "  # nanoseconds
    "08 16 "  # checksum
    "43 6b 20 4c "  # message 0: participant, category, type, indicator
    "00 00 00 00 00 00 00 00 "  # transaction id, participant reference
    "53 50 58 57 20 "  # symbol
    "00 "  # reserved
    "4f "  # month
    "14 "  # day
    "1a "  # year
    "43 "  # strike den
    "00 5a 06 e0 "  # strike
    "42 "  # premium den
    "00 00 00 00 "  # bid
    "00 00 00 00 "  # bid size
    "00 00 00 00 "  # offer
    "00 00 00 00 "  # offer size
)


EXAMPLES: dict[int, bytes] = {1: EX1, 2: EX2, 3: EX3, 4: EX4, 5: EX5, 6: EX6, 7: EX7, 8: EX8, 9: EX9, 10: EX10, 11: EX11, 12: EX12, 13: EX13, 14: EX14, 15: EX15, 16: EX16, 17: EX17, 18: EX18}
"""Example number -> block."""
