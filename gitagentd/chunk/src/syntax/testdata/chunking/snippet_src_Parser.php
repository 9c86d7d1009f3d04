<?php

namespace App;

function helper($x) {
    return $x;
}

class Parser {
    private $limit;

    public function parse($text) {
        return $text;
    }
}
