package demo;

import java.util.List;

/** A class with a long method, tiny getters and a nested enum. */
public class Long {
    private int a;
    private int b;

    int a() { return a; }
    int b() { return b; }
    int c() { return a + b; }

    /** Sums many steps. */
    public int sum(List<Integer> values) {
        int total = 0;
        total += step(0); // step 0
        total += step(1); // step 1
        total += step(2); // step 2
        total += step(3); // step 3
        total += step(4); // step 4
        total += step(5); // step 5
        total += step(6); // step 6
        total += step(7); // step 7
        total += step(8); // step 8
        total += step(9); // step 9
        total += step(10); // step 10
        total += step(11); // step 11
        total += step(12); // step 12
        total += step(13); // step 13
        total += step(14); // step 14
        total += step(15); // step 15
        total += step(16); // step 16
        total += step(17); // step 17
        total += step(18); // step 18
        total += step(19); // step 19
        total += step(20); // step 20
        total += step(21); // step 21
        total += step(22); // step 22
        total += step(23); // step 23
        total += step(24); // step 24
        total += step(25); // step 25
        total += step(26); // step 26
        total += step(27); // step 27
        total += step(28); // step 28
        total += step(29); // step 29
        total += step(30); // step 30
        total += step(31); // step 31
        total += step(32); // step 32
        total += step(33); // step 33
        total += step(34); // step 34
        total += step(35); // step 35
        total += step(36); // step 36
        total += step(37); // step 37
        total += step(38); // step 38
        total += step(39); // step 39
        total += step(40); // step 40
        total += step(41); // step 41
        total += step(42); // step 42
        total += step(43); // step 43
        total += step(44); // step 44
        total += step(45); // step 45
        total += step(46); // step 46
        total += step(47); // step 47
        total += step(48); // step 48
        total += step(49); // step 49
        total += step(50); // step 50
        total += step(51); // step 51
        total += step(52); // step 52
        total += step(53); // step 53
        total += step(54); // step 54
        total += step(55); // step 55
        total += step(56); // step 56
        total += step(57); // step 57
        total += step(58); // step 58
        total += step(59); // step 59
        total += step(60); // step 60
        total += step(61); // step 61
        total += step(62); // step 62
        total += step(63); // step 63
        total += step(64); // step 64
        total += step(65); // step 65
        total += step(66); // step 66
        total += step(67); // step 67
        total += step(68); // step 68
        total += step(69); // step 69
        total += step(70); // step 70
        total += step(71); // step 71
        total += step(72); // step 72
        total += step(73); // step 73
        total += step(74); // step 74
        total += step(75); // step 75
        total += step(76); // step 76
        total += step(77); // step 77
        total += step(78); // step 78
        total += step(79); // step 79
        total += step(80); // step 80
        total += step(81); // step 81
        total += step(82); // step 82
        total += step(83); // step 83
        total += step(84); // step 84
        total += step(85); // step 85
        total += step(86); // step 86
        total += step(87); // step 87
        total += step(88); // step 88
        total += step(89); // step 89
        total += step(90); // step 90
        total += step(91); // step 91
        total += step(92); // step 92
        total += step(93); // step 93
        total += step(94); // step 94
        total += step(95); // step 95
        total += step(96); // step 96
        total += step(97); // step 97
        total += step(98); // step 98
        total += step(99); // step 99
        total += step(100); // step 100
        total += step(101); // step 101
        total += step(102); // step 102
        total += step(103); // step 103
        total += step(104); // step 104
        total += step(105); // step 105
        total += step(106); // step 106
        total += step(107); // step 107
        total += step(108); // step 108
        total += step(109); // step 109
        total += step(110); // step 110
        total += step(111); // step 111
        total += step(112); // step 112
        total += step(113); // step 113
        total += step(114); // step 114
        total += step(115); // step 115
        total += step(116); // step 116
        total += step(117); // step 117
        total += step(118); // step 118
        total += step(119); // step 119
        total += step(120); // step 120
        total += step(121); // step 121
        total += step(122); // step 122
        total += step(123); // step 123
        total += step(124); // step 124
        total += step(125); // step 125
        total += step(126); // step 126
        total += step(127); // step 127
        total += step(128); // step 128
        total += step(129); // step 129
        return total;
    }

    enum Mode { FAST, SLOW }
}
