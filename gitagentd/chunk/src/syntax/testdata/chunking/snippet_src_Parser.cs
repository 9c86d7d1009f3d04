using System;

namespace Demo
{
    public class Parser
    {
        public int Limit { get; set; }

        public Parser() { }

        public string Parse(string text)
        {
            return text;
        }
    }

    public enum Color { Red }
}
